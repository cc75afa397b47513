import { scimProblem } from './scim-error.js';
import type { Filter } from './scim-filter.js';
import { matches } from './scim-matches.js';
import type { PatchOperation } from './scim-patch-body.js';
import type { Doc } from './scim-patch.js';
import type { ScimMember } from './scim-groups.repository.js';

/*
 * The members a group PATCH or PUT leaves, worked out without reading them all when it can: an
 * identity provider adds and removes members by value (Okta, Entra ID), which needs only those
 * values; a replace or a filtered removal needs the current members, read once, when first asked.
 */

const key = (member: ScimMember): string => `${member.type}:${member.value}`;

/** A `members` value as SCIM sends it: `{ value, type? }`; `type` absent means a user. */
export function memberRefs(value: unknown): ScimMember[] {
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value : [value];
  return list.map((item: unknown, index) => {
    const record = typeof item === 'object' && item !== null && !Array.isArray(item) ? (item as Doc) : undefined;
    const id =
      record === undefined ? undefined : Object.entries(record).find(([name]) => name.toLowerCase() === 'value')?.[1];
    const text = typeof id === 'number' ? String(id) : id;
    if (typeof text !== 'string' || !/^[1-9]\d{0,15}$/.test(text) || !Number.isSafeInteger(Number(text)))
      throw scimProblem('invalidValue', `members[${index}].value must be the id of a user or a group`, 'members');
    const type = Object.entries(record ?? {}).find(([name]) => name.toLowerCase() === 'type')?.[1];
    if (type !== undefined && type !== null && (typeof type !== 'string' || !/^(user|group)$/i.test(type)))
      throw scimProblem('invalidValue', `members[${index}].type must be User or Group`, 'members');
    return { value: text, type: typeof type === 'string' && type.toLowerCase() === 'group' ? 'Group' : 'User' };
  });
}

/** The most member-filter evaluations one PATCH may cost (operations × members). */
export const MAX_EVALUATIONS = 200_000;

/** The values a filter names when it is `value eq "…"` or an `or` of those; undefined for any other shape. */
function namedValues(filter: Filter): string[] | undefined {
  if (filter.kind === 'compare' && filter.op === 'eq' && filter.path.attr === 'value' && filter.path.sub === undefined)
    return typeof filter.value === 'string' || typeof filter.value === 'number' ? [String(filter.value)] : undefined;
  if (filter.kind !== 'or') return undefined;
  const values: string[] = [];
  for (const term of filter.terms) {
    const named = namedValues(term);
    if (named === undefined) return undefined;
    values.push(...named);
  }
  return values;
}

export class MemberChanges {
  private evaluated = 0;
  /** The whole set, once a replace or a filtered removal needed it. */
  private whole?: Map<string, ScimMember>;
  private original?: Map<string, ScimMember>;
  private readonly added = new Map<string, ScimMember>();
  private readonly removed = new Map<string, ScimMember>();

  constructor(private readonly load: () => Promise<readonly ScimMember[]>) {}

  private async current(): Promise<Map<string, ScimMember>> {
    this.original ??= new Map((await this.load()).map((member) => [key(member), member]));
    return this.original;
  }

  private async all(): Promise<Map<string, ScimMember>> {
    if (this.whole === undefined) {
      this.whole = new Map(await this.current());
      for (const member of this.removed.values()) this.whole.delete(key(member));
      for (const member of this.added.values()) this.whole.set(key(member), member);
    }
    return this.whole;
  }

  add(members: readonly ScimMember[]): void {
    for (const member of members) {
      if (this.whole !== undefined) this.whole.set(key(member), member);
      else {
        this.removed.delete(key(member));
        this.added.set(key(member), member);
      }
    }
  }

  remove(members: readonly ScimMember[]): void {
    for (const member of members) {
      if (this.whole !== undefined) this.whole.delete(key(member));
      else {
        this.added.delete(key(member));
        this.removed.set(key(member), member);
      }
    }
  }

  replace(members: readonly ScimMember[]): void {
    this.whole = new Map(members.map((member) => [key(member), member]));
  }

  async removeWhere(operation: PatchOperation): Promise<void> {
    const all = await this.all();
    const filter = operation.path?.filter;
    const named = filter === undefined ? undefined : namedValues(filter);
    // `members[value eq "12" or value eq "13"]`, as identity providers write it: by key, at any size.
    if (named !== undefined) {
      for (const value of named) for (const type of ['User', 'Group']) all.delete(`${type}:${value}`);
      return;
    }
    // Any other filter is matched against every member: bounded, so that no PATCH runs for long.
    this.evaluated += all.size;
    if (this.evaluated > MAX_EVALUATIONS)
      throw scimProblem(
        'tooMany',
        `The PATCH's member filters would be tried on more than ${MAX_EVALUATIONS} members: name the members by value`,
        'path',
      );
    for (const [name, member] of all) if (filter === undefined || matches(filter, member)) all.delete(name);
  }

  /** One PATCH operation on `members` (path `members`, `members[filter]`, or a value's `members` key). */
  async apply(operation: PatchOperation, value: unknown): Promise<void> {
    const path = operation.path;
    if (path?.sub !== undefined || path?.attr.sub !== undefined)
      throw scimProblem(
        'invalidPath',
        'A member is added or removed whole: name members, or members[value eq "…"]',
        'path',
      );
    if (operation.op === 'remove') {
      if (path?.filter !== undefined) await this.removeWhere(operation);
      else if (value !== undefined && value !== null) this.remove(memberRefs(value));
      else this.replace([]);
      return;
    }
    if (path?.filter !== undefined) await this.removeWhere(operation);
    if (operation.op === 'replace' && path?.filter === undefined) this.replace(memberRefs(value));
    else this.add(memberRefs(value));
  }

  /** What to write: the members to add and to remove. */
  async changes(): Promise<{ add: ScimMember[]; remove: ScimMember[] }> {
    if (this.whole === undefined) return { add: [...this.added.values()], remove: [...this.removed.values()] };
    const before = await this.current();
    return {
      add: [...this.whole.values()].filter((member) => !before.has(key(member))),
      remove: [...before.values()].filter((member) => !this.whole?.has(key(member))),
    };
  }
}
