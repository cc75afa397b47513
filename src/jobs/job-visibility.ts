import type { Subject } from '../platform/auth/auth-context.js';
import type { RoleCode } from '../platform/auth/roles.js';

/** The roles that see every job, system jobs included (part 6.10). */
const SEE_EVERY_JOB: ReadonlySet<RoleCode> = new Set<RoleCode>(['super_admin', 'admin']);

/**
 * Who started a job: `created_by` in its data (null for a system job). Bulk jobs enqueued before
 * jobs carried `created_by` name their requester as `actor_id`.
 */
export function creatorOf(type: string, data: unknown): number | null {
  const fields = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const creator = 'created_by' in fields ? fields.created_by : type === 'bulk' ? fields.actor_id : null;
  return typeof creator === 'number' ? creator : null;
}

/**
 * A job is the business of whoever started it, and of the administrators: anyone else is told it
 * does not exist, so job ids (which travel in Location headers and logs) reveal nothing.
 */
export function maySeeJob(actor: Pick<Subject, 'user_id' | 'role'>, createdBy: number | null): boolean {
  return SEE_EVERY_JOB.has(actor.role.code) || (createdBy !== null && createdBy === actor.user_id);
}
