import { Module } from '@nestjs/common';
import { ReadCountsRepository } from './read-counts.repository.js';
import { MessageReadStateController } from './message-read-state.controller.js';
import { ReadStateRepository } from './read-state.repository.js';
import { ReadStateService } from './read-state.service.js';

/** Message read state and its cached counts (part 6.8). */
@Module({
  controllers: [MessageReadStateController],
  providers: [ReadStateRepository, ReadStateService, ReadCountsRepository],
  exports: [ReadStateService, ReadCountsRepository],
})
export class ReadStateModule {}
