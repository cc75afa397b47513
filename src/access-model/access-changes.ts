import { devicePaths, globalDecision } from './access-rules.js';
import type { Subject } from '../platform/auth/auth-context.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import type { DecidedBy } from '../platform/auth/decision.js';
import { isDeviceScoped, PERMISSIONS } from '../platform/auth/permissions.js';

/**
 * Who may do what, as the access questions of part 6.13 answer it, for the users a write touches:
 * each permission a user is allowed everywhere (layers 3a and 3b, `device_id` null) and, apart
 * from that, each device-scoped permission it is allowed on a device through its authority there
 * (layer 3c), as `/users/{id}/access` lists them (`meta.scope: "all"` and the devices allowed by an
 * authority). Judged by the rules of part 5 at one moment, so it cannot disagree with the guards.
 */
export interface AccessEntry {
  readonly user_id: number;
  readonly device_id: number | null;
  readonly permission_code: string;
  readonly decided_by: DecidedBy;
  /** The group the way runs through, when it does (part 6.17 names it); absent otherwise. */
  readonly group_id?: number;
}

/** One difference between two answers (part 6.17's `access_changes`, and the `access.*` events). */
export interface AccessChange extends AccessEntry {
  readonly change: 'gained' | 'lost';
}

const DEVICE_SCOPED = PERMISSIONS.map((permission) => permission.code).filter(isDeviceScoped);

const ALL_CODES = PERMISSIONS.map((permission) => permission.code);

/**
 * Every entry of the subjects' access at `at` (epoch ms), from their facts then; `only`: of those
 * permissions alone (a write that can change no other, such as a grant of one permission).
 */
export function accessEntries(
  subjects: readonly Subject[],
  authorities: readonly AuthorityFacts[],
  at: number,
  only?: ReadonlySet<string>,
): AccessEntry[] {
  const entries: AccessEntry[] = [];
  const codes = only === undefined ? ALL_CODES : ALL_CODES.filter((code) => only.has(code));
  const deviceScoped = only === undefined ? DEVICE_SCOPED : DEVICE_SCOPED.filter((code) => only.has(code));
  const bySubject = new Map(subjects.map((subject) => [subject.user_id, subject]));
  for (const subject of subjects)
    for (const code of codes) {
      const decision = globalDecision(subject, code, at);
      if (decision.decided_by !== null)
        entries.push({
          user_id: subject.user_id,
          device_id: null,
          permission_code: code,
          decided_by: decision.decided_by,
          ...(decision.group_id === null ? {} : { group_id: decision.group_id }),
        });
    }
  // Each user's authorities on a device together (its own and its groups'), judged in deciding order.
  const held = new Map<string, AuthorityFacts[]>();
  for (const authority of authorities) {
    if (authority.user_id === null) continue;
    const key = `${authority.user_id}/${authority.device_id}`;
    const onDevice = held.get(key);
    if (onDevice === undefined) held.set(key, [authority]);
    else onDevice.push(authority);
  }
  for (const onDevice of held.values()) {
    const [sample] = onDevice;
    const subject = sample?.user_id == null ? undefined : bySubject.get(sample.user_id);
    // Layer 3c holds only for a subject allowed anything at all (globalDecision judges that too).
    if (sample === undefined || subject === undefined || !subject.role.admin_access || !subject.active) continue;
    for (const code of deviceScoped) {
      const [first] = devicePaths(onDevice, code, at);
      if (first !== undefined)
        entries.push({
          user_id: subject.user_id,
          device_id: sample.device_id,
          permission_code: code,
          decided_by: first.decided_by,
          ...(first.group_id === null ? {} : { group_id: first.group_id }),
        });
    }
  }
  return entries;
}

const keyOf = (entry: AccessEntry): string => `${entry.user_id}/${entry.device_id ?? '*'}/${entry.permission_code}`;

/**
 * What changed from `before` to `after`: an entry only in `after` is gained (decided by its way
 * now), one only in `before` is lost (decided by its way then); an entry in both is unchanged,
 * even when another way now decides it. Ordered by user, device (everywhere first), permission.
 */
export function accessDifference(before: readonly AccessEntry[], after: readonly AccessEntry[]): AccessChange[] {
  const was = new Map(before.map((entry) => [keyOf(entry), entry]));
  const now = new Map(after.map((entry) => [keyOf(entry), entry]));
  const changes: AccessChange[] = [];
  for (const [key, entry] of now) if (!was.has(key)) changes.push({ ...entry, change: 'gained' });
  for (const [key, entry] of was) if (!now.has(key)) changes.push({ ...entry, change: 'lost' });
  return changes.sort(
    (a, b) =>
      a.user_id - b.user_id ||
      (a.device_id ?? 0) - (b.device_id ?? 0) ||
      a.permission_code.localeCompare(b.permission_code) ||
      a.change.localeCompare(b.change),
  );
}

/** The facts of one side of a write: the subjects and their authorities. */
export interface AccessFacts {
  readonly subjects: readonly Subject[];
  readonly authorities: readonly AuthorityFacts[];
}

/**
 * `accessDifference` of the two sides' `accessEntries`, judged one user at a time: the same
 * changes in the same order, without holding every entry of every user at once (a group of
 * 100 000 members made millions of entries per side, and collecting them was most of the write).
 */
export function accessChanges(
  before: AccessFacts,
  after: AccessFacts,
  at: number,
  only?: ReadonlySet<string>,
): AccessChange[] {
  const was = byUser(before);
  const now = byUser(after);
  const users = [...new Set([...was.keys(), ...now.keys()])].sort((a, b) => a - b);
  const changes: AccessChange[] = [];
  const none: AccessFacts = { subjects: [], authorities: [] };
  for (const user of users) {
    const then = was.get(user) ?? none;
    const later = now.get(user) ?? none;
    const difference = accessDifference(
      accessEntries(then.subjects, then.authorities, at, only),
      accessEntries(later.subjects, later.authorities, at, only),
    );
    for (const change of difference) changes.push(change);
  }
  return changes;
}

/** Each subject with its own authorities (an authority of a user without a subject grants nothing). */
function byUser(facts: AccessFacts): Map<number, { subjects: Subject[]; authorities: AuthorityFacts[] }> {
  const users = new Map<number, { subjects: Subject[]; authorities: AuthorityFacts[] }>();
  for (const subject of facts.subjects) users.set(subject.user_id, { subjects: [subject], authorities: [] });
  for (const authority of facts.authorities)
    if (authority.user_id !== null) users.get(authority.user_id)?.authorities.push(authority);
  return users;
}
