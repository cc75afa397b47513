import { Module } from '@nestjs/common';
import { AccessModelModule } from '../access-model/access-model.module.js';
import { ReadStateModule } from '../read-state/read-state.module.js';
import { CacheRebuildService } from './cache-rebuild.service.js';
import { CacheController } from './cache.controller.js';

/**
 * `POST /cache/rebuild` (part 6.14): drops the chosen projections and warms them from the
 * database. A feature of its own: it reaches into the projections of auth and read state, which the
 * platform's cache must not depend on.
 */
@Module({
  imports: [AccessModelModule, ReadStateModule],
  controllers: [CacheController],
  providers: [CacheRebuildService],
})
export class CacheAdminModule {}
