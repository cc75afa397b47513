import { creatorOf, maySeeJob } from '../../src/jobs/job-visibility.js';
import { ROLES, type RoleCode } from '../../src/platform/auth/roles.js';

const as = (code: RoleCode, user_id = 7) => ({ user_id, role: ROLES.find((role) => role.code === code)! });

describe('who sees a job (part 6.10)', () => {
  it('reads the creator from the job, and the requester of a bulk job enqueued before jobs carried one', () => {
    expect(creatorOf('send-push', { message_id: 1, created_by: 7 })).toBe(7);
    expect(creatorOf('bulk', { actor_id: 7, created_by: 8 })).toBe(8);
    expect(creatorOf('bulk', { actor_id: 7 })).toBe(7);
    expect(creatorOf('bulk', { actor_id: 7, created_by: null })).toBeNull();
    expect(creatorOf('send-push', { actor_id: 7 })).toBeNull();
    expect(creatorOf('webhook-deliver', null)).toBeNull();
  });

  it('shows a job to its creator and to super_admin and admin; a system job to those two only', () => {
    const roles: RoleCode[] = ['super_admin', 'admin', 'operator', 'viewer'];
    expect(roles.map((code) => maySeeJob(as(code), 7))).toEqual([true, true, true, true]);
    expect(roles.map((code) => maySeeJob(as(code), 8))).toEqual([true, true, false, false]);
    expect(roles.map((code) => maySeeJob(as(code), null))).toEqual([true, true, false, false]);
  });
});
