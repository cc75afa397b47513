import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { MessagesService, type Notice } from '../inbox/messages.service.js';
import { permissionIdOf } from '../platform/auth/permissions.js';
import { ROLES, USER_STATUS } from '../platform/auth/roles.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { JobQueue, PURGE_POLICY } from '../platform/jobs/job-queue.js';
import { AccessReviewItemsRepository } from './access-review-items.repository.js';
import { AccessReviewsRepository, type ReviewProgress } from './access-reviews.repository.js';

/** Inbox messages of access reviews: `type: "access_review"`, `data: {access_review_id}`. */
export const NOTICE_TYPE = 'access_review';
/** Reviewers are reminded this long before a campaign is due (part 6.16). */
export const DUE_NOTICE_HOURS = 24;
/** Reviewers told per transaction: each message also writes its read state, audit event and push job. */
const BATCH = 100;

const DECIDE = 'access_reviews.decide';
const DECIDE_ID = permissionIdOf(DECIDE) ?? 0;
const DECIDING_ROLES = ROLES.filter((role) => role.admin_access && role.permissions.has(DECIDE)).map((role) => role.id);
/** Only these roles reach the admin API at all: a member owning a device in scope is not told. */
const ADMIN_ROLES = ROLES.filter((role) => role.admin_access).map((role) => role.id);

type Round = 'open' | 'due';

function notice(round: Round, userId: number, review: ReviewProgress): Notice {
  const due = review.due_at.toISOString();
  return {
    user_id: userId,
    type: NOTICE_TYPE,
    title: round === 'open' ? `Access review opened: ${review.name}` : `Access review due soon: ${review.name}`,
    body:
      round === 'open'
        ? `Access review ${review.id} is open for your decisions until ${due}.`
        : `Access review ${review.id} is due at ${due}; undecided items take its default decision (${review.default_decision}).`,
    data: { access_review_id: review.id },
  };
}

/** The round of notices a campaign is in and how far it got, or undefined when none is due. */
function nextRound(review: ReviewProgress | undefined): { round: Round; through: number } | undefined {
  if (review?.state !== 'open') return undefined;
  if (!review.open_notices_done) return { round: 'open', through: Number(review.open_notices_through) };
  if (!review.due_notices_done && review.due_at.getTime() <= Date.now() + DUE_NOTICE_HOURS * 3_600_000)
    return { round: 'due', through: Number(review.due_notices_through) };
  return undefined;
}

/**
 * Tells the reviewers of a campaign through the inbox when it opens and again 24 hours before it
 * is due (part 6.16). Reviewers are the active users allowed `access_reviews.decide` by an admin
 * role or a grant, and the owners and delegates holding it on a device of the campaign's items.
 * Sent a batch per transaction, each recording how far it got, so a crash resends nothing and
 * the every-minute job finishes what a crash interrupted.
 */
@Injectable()
export class AccessReviewNotices implements OnModuleInit {
  private readonly logger = new Logger('AccessReviews');

  constructor(
    private readonly uow: UnitOfWork,
    private readonly queue: JobQueue,
    private readonly reviews: AccessReviewsRepository,
    private readonly items: AccessReviewItemsRepository,
    private readonly messages: MessagesService,
  ) {}

  onModuleInit(): void {
    this.queue.declare('access-review-notices', PURGE_POLICY);
    this.queue.register('access-review-notices', async () => ({ told: await this.sendDue() }));
    this.queue.scheduleEvery('access-review-notices', '* * * * *');
  }

  /**
   * Every campaign's notices that are due; answers how many reviewers were told. Each campaign on
   * its own: one whose batch keeps failing (its cursor stays, the next run tries again) holds up
   * neither the campaigns after it nor their due reminders.
   */
  async sendDue(): Promise<number> {
    let told = 0;
    for (const id of await this.reviews.withNoticesDue(DUE_NOTICE_HOURS)) {
      told += await this.send(id).catch((error: unknown) => {
        this.logger.warn({ msg: 'access review notices deferred', access_review_id: id, err: String(error) });
        return 0;
      });
    }
    return told;
  }

  /**
   * The notices due of one campaign, a batch per transaction; answers how many were told. Who is
   * next is found before the campaign's lock is taken (a query over the campaign's devices, which
   * decisions must not wait for); under the lock the batch is sent only if nobody moved the cursor
   * meanwhile. The next batch is planned from the campaign as read under that lock, never from a
   * replica again, so a lagging replica cannot make this loop spin.
   */
  async send(reviewId: number): Promise<number> {
    let told = 0;
    let review = await this.reviews.peek(reviewId);
    for (let planned = nextRound(review); planned !== undefined; planned = nextRound(review)) {
      const round = planned;
      const reviewers = await this.items.reviewers(
        reviewId,
        DECIDING_ROLES,
        DECIDE_ID,
        USER_STATUS.active,
        round.through,
        BATCH,
        ADMIN_ROLES,
      );
      const step = await this.uow.run(async (tx) => {
        const locked = await this.reviews.progress(tx, reviewId);
        const now = nextRound(locked);
        if (locked === undefined || now?.round !== round.round || now.through !== round.through)
          return { told: 0, review: locked };
        for (const userId of reviewers) await this.messages.notify(tx, notice(round.round, userId, locked));
        const cursor = {
          through: String(reviewers.at(-1) ?? round.through),
          done: reviewers.length < BATCH,
        };
        const moved =
          round.round === 'open'
            ? { open_notices_through: cursor.through, open_notices_done: cursor.done }
            : { due_notices_through: cursor.through, due_notices_done: cursor.done };
        await this.reviews.patch(tx, reviewId, moved);
        return { told: reviewers.length, review: { ...locked, ...moved } };
      });
      told += step.told;
      review = step.review;
    }
    if (told > 0) this.logger.log({ msg: 'told reviewers of an access review', access_review_id: reviewId, told });
    return told;
  }
}
