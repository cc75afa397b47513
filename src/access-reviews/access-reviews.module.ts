import { Module } from '@nestjs/common';
import { AccessFindingsController } from './access-findings.controller.js';
import { AccessFindingsRepository } from './access-findings.repository.js';
import { AccessFindingsService } from './access-findings.service.js';

/**
 * Access reviews and unused access (part 6.16). So far the findings: revocable paths nobody has
 * used for a while, from the last uses the guard records (`platform/auth/access-uses.ts`).
 */
@Module({
  controllers: [AccessFindingsController],
  providers: [AccessFindingsRepository, AccessFindingsService],
})
export class AccessReviewsModule {}
