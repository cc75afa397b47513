import { Global, Module } from '@nestjs/common';
import { ListPages } from './list-pages.js';
import { Projections } from './projections.js';

/** The read side over the cache and the database: cached details (ResourceTable) and list pages. */
@Global()
@Module({
  providers: [Projections, ListPages],
  exports: [Projections, ListPages],
})
export class ProjectionsModule {}
