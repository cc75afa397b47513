import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { ReadStateModule } from '../read-state/read-state.module.js';
import { CacheRebuildService } from './cache-rebuild.service.js';
import { CacheController } from './cache.controller.js';

/**
 * The triggered rebuild (part 6.14). Its own module, beside the global `CacheModule` every
 * module uses: it reaches into the projections of auth and read state, which the cache itself
 * must not depend on.
 */
@Module({
  imports: [AuthModule, ReadStateModule],
  controllers: [CacheController],
  providers: [CacheRebuildService],
})
export class CacheRebuildModule {}
