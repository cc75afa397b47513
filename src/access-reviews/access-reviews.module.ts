import { Module } from '@nestjs/common';
import { GrantsModule } from '../grants/grants.module.js';
import { GroupsModule } from '../groups/groups.module.js';
import { InboxModule } from '../inbox/inbox.module.js';
import { AccessFindingsController } from './access-findings.controller.js';
import { AccessFindingsRepository } from './access-findings.repository.js';
import { AccessFindingsService } from './access-findings.service.js';
import { AccessReviewClose } from './access-review-close.js';
import { AccessReviewDecisions } from './access-review-decisions.service.js';
import { AccessReviewItemsRepository } from './access-review-items.repository.js';
import { AccessReviewNotices } from './access-review-notices.js';
import { AccessReviewSnapshot } from './access-review-snapshot.js';
import { AccessReviewsController } from './access-reviews.controller.js';
import { AccessReviewsRepository } from './access-reviews.repository.js';
import { AccessReviewsService } from './access-reviews.service.js';

/**
 * Access reviews and unused access (part 6.16): the findings (revocable paths nobody has used
 * for a while, from the last uses the guard records in `access-model/access-uses.ts`), and
 * certification campaigns whose close revokes through the grants and groups modules' own writes.
 */
@Module({
  imports: [GrantsModule, GroupsModule, InboxModule],
  controllers: [AccessFindingsController, AccessReviewsController],
  providers: [
    AccessFindingsRepository,
    AccessFindingsService,
    AccessReviewsRepository,
    AccessReviewItemsRepository,
    AccessReviewsService,
    AccessReviewDecisions,
    AccessReviewSnapshot,
    AccessReviewClose,
    AccessReviewNotices,
  ],
})
export class AccessReviewsModule {}
