import { Injectable } from '@nestjs/common';
import { AuditService } from '../platform/audit/audit.service.js';
import type { AuthContext, Subject } from '../platform/auth/auth-context.js';
import { assertMayWriteUser } from '../access-model/user-rules.js';
import { AuthorizationService, type DeviceQuestion } from '../access-model/authorization.service.js';
import { GroupFactsRepository } from '../access-model/group-facts.repository.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { ApiError } from '../platform/http/api-error.js';
import { AccessReviewItemsRepository, type ItemFacts } from './access-review-items.repository.js';
import { AccessReviewsRepository } from './access-reviews.repository.js';
import { reviewStateConflict } from './access-reviews.service.js';
import type {
  ReviewDecision,
  ReviewDecisionResultDto,
  ReviewDecisionsDto,
  ReviewDecisionsResponseDto,
} from './dto/access-review.dto.js';

const DECIDE = 'access_reviews.decide';

/**
 * Revoking a grant is a write on its user (part 5): the decider's role must outrank the user's,
 * as for a manual revoke. Answers the refusal, if any.
 */
export function rankRefusal(decider: Pick<Subject, 'user_id' | 'role'>, item: ItemFacts): ApiError | undefined {
  // A group's right, or a membership, is not a write on one user: removing is not limited (part 5).
  if (item.kind !== 'g' || item.user_id === null || item.user_role_id === null) return undefined;
  try {
    assertMayWriteUser(decider, { id: item.user_id, role_id: item.user_role_id });
    return undefined;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
}

function failed(code: string, message: string): Pick<ReviewDecisionResultDto, 'status' | 'error'> {
  return { status: 'failed', error: { code, message } };
}

/**
 * `POST /access-reviews/{id}/decisions` (part 6.16): each item is decided by an actor allowed
 * `access_reviews.decide` on its device (a grant's item: by role or grant) who is not its user;
 * an owner's authority cannot be `revoke`. Items fail one by one. The campaign's row lock makes a
 * decision and a close take turns: a decision lands before the close, or meets `closing` (409).
 */
@Injectable()
export class AccessReviewDecisions {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly reviews: AccessReviewsRepository,
    private readonly items: AccessReviewItemsRepository,
    private readonly audit: AuditService,
    private readonly authorization: AuthorizationService,
    private readonly groupFacts: GroupFactsRepository,
  ) {}

  async decide(actor: AuthContext, id: number, dto: ReviewDecisionsDto): Promise<ReviewDecisionsResponseDto> {
    const seen = new Set<number>();
    dto.items.forEach((item, index) => {
      if (seen.has(item.item_id))
        throw ApiError.field(`items.${index}.item_id`, 'unique', `item ${item.item_id} is named twice`);
      seen.add(item.item_id);
    });
    // Who may decide an item depends only on its device (fixed at the snapshot) and the actor, so
    // it is judged before the transaction: the evaluator reads on a pool connection of its own,
    // and doing so while holding the campaign's lock, with every other reviewer's request holding
    // a connection while it waits for that lock, starved the pool (503).
    const allowed = await this.mayDecide(
      actor,
      (await this.items.readFacts([...seen])).filter((row) => row.review_id === id),
    );
    const results = await this.uow.run(async (tx) => {
      const review = await this.reviews.progress(tx, id);
      if (review === undefined) throw ApiError.notFound('ACCESS_REVIEW_NOT_FOUND', id);
      if (review.state !== 'open') throw reviewStateConflict(id, review.state, 'decide');
      const facts = new Map(
        (await this.items.lockFacts(tx, [...seen])).filter((row) => row.review_id === id).map((row) => [row.id, row]),
      );
      const mine = new Set(
        [...facts.values()].some((fact) => fact.user_id === null)
          ? await this.groupFacts.groupsEvenDeleted(tx.db, actor.user_id)
          : [],
      );
      const answered = dto.items.map((item, index): ReviewDecisionResultDto => {
        const base = { index, item_id: item.item_id, decision: item.decision, error: null };
        const fact = facts.get(item.item_id);
        if (fact === undefined)
          return {
            ...base,
            ...failed('ACCESS_REVIEW_ITEM_NOT_FOUND', `Access review item ${item.item_id} does not exist`),
          };
        if (allowed.get(fact.id) !== true)
          return {
            ...base,
            ...failed(
              'PERMISSION_DENIED',
              fact.device_id === null
                ? `Missing the permission ${DECIDE} (by role or grant) for a ${fact.kind === 'm' ? 'membership' : 'permission grant'}`
                : `Missing the permission ${DECIDE} on device ${fact.device_id}`,
            ),
          };
        if (fact.user_id === actor.user_id)
          return { ...base, ...failed('SELF_ACTION_FORBIDDEN', 'You cannot decide on your own access') };
        // A group's right is the access of everyone the group reaches: a member may not judge it
        // (a member of a deleted group too: its restore brings the right back to it).
        if (fact.user_id === null && fact.group_id !== null && mine.has(fact.group_id))
          return {
            ...base,
            ...failed(
              'SELF_ACTION_FORBIDDEN',
              `You cannot decide on a right of group ${fact.group_id}: you belong to it`,
            ),
          };
        const outranked = item.decision === 'revoke' && fact.kind === 'g' ? rankRefusal(actor, fact) : undefined;
        if (outranked !== undefined) return { ...base, ...failed(outranked.code, outranked.message) };
        if (item.decision === 'revoke' && fact.kind === 'o')
          return {
            ...base,
            ...failed('ACCESS_REVIEW_ITEM_NOT_REVOCABLE', 'An owner’s authority cannot be revoked by a review'),
          };
        return { ...base, status: 'decided' };
      });
      const decided = answered.filter((result) => result.status === 'decided');
      if (decided.length === 0) return answered;
      const notes = new Map(dto.items.map((item) => [item.item_id, item.note ?? null]));
      await this.items.decide(
        tx,
        decided.map((result) => ({
          id: result.item_id,
          decision: result.decision,
          note: notes.get(result.item_id) ?? null,
        })),
        actor.user_id,
      );
      const net = { keep: 0, revoke: 0 };
      const count = (decision: ReviewDecision | null, by: number): void => {
        if (decision !== null) net[decision] += by;
      };
      for (const result of decided) {
        count(facts.get(result.item_id)?.decision ?? null, -1);
        count(result.decision, 1);
      }
      await this.reviews.count(tx, id, net.keep, net.revoke);
      await this.audit.record(tx, 'access_review.decide', id, {
        changes: {
          decisions: [null, decided.map((result) => ({ item_id: result.item_id, decision: result.decision }))],
        },
      });
      return answered;
    });
    const failures = results.filter((result) => result.status === 'failed').length;
    return { accepted: results.length, processed: results.length - failures, failed: failures, results };
  }

  /** Per item: may the actor decide it? A device's item on that device; a grant's item only by role or grant. */
  private async mayDecide(actor: AuthContext, facts: readonly ItemFacts[]): Promise<Map<number, boolean>> {
    const everywhere = this.authorization.decideGlobally(actor, DECIDE).allowed;
    const onDevices = facts.filter((fact) => fact.device_id !== null);
    const questions: DeviceQuestion[] = onDevices.map((fact) => ({
      permission: DECIDE,
      device_id: fact.device_id ?? 0,
    }));
    const answers = await this.authorization.decideMany(actor, questions, true);
    const allowed = new Map<number, boolean>();
    for (const fact of facts) if (fact.device_id === null) allowed.set(fact.id, everywhere);
    onDevices.forEach((fact, index) => allowed.set(fact.id, answers[index] === true));
    return allowed;
  }
}
