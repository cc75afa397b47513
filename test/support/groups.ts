import { randomUUID } from 'node:crypto';
import { actor, type Caller } from './auth.js';
import type { TestApp } from './app.js';
import { caller } from './requests.js';

/** A name no other spec uses (group names are unique among live and deleted groups). */
export const unique = (prefix: string): string => `${prefix} ${randomUUID().slice(0, 8)}`;

/**
 * `actor`, remembering each user it makes: other spec files write the same database beside this
 * one, so a file counts only what its own actors wrote (`mine`).
 */
export function trackedActors(): { mine: number[]; actor: (role?: Parameters<typeof actor>[0]) => Promise<Caller> } {
  const mine: number[] = [];
  return {
    mine,
    actor: async (role) => {
      const made = await actor(role);
      mine.push(made.user.id);
      return made;
    },
  };
}

/** A new group made by `who` through the API (201); answers its id. */
export async function createGroup(t: TestApp, who: Caller, body: object = {}): Promise<number> {
  const created = await caller(t, who)
    .post('/v1/admin/groups', { name: unique('group'), ...body })
    .expect(201);
  return created.body.data.id as number;
}

/** Adds the members (each must come back `added`); answers their membership ids in order. */
export async function addMembers(
  t: TestApp,
  who: Caller,
  groupId: number,
  members: readonly object[],
  extra: object = {},
): Promise<number[]> {
  const res = await caller(t, who)
    .post(`/v1/admin/groups/${groupId}/members`, { members, ...extra })
    .expect(200);
  return (res.body.data.results as { status: string; membership_id: number; error: unknown }[]).map((item) => {
    expect([item.status, item.error]).toEqual(['added', null]);
    return item.membership_id;
  });
}
