import { randomUUID } from 'node:crypto';
import { actor, type Caller } from './auth.js';

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
