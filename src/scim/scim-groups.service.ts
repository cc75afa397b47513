import { Injectable } from '@nestjs/common';
import { GroupMembersService, type Item } from '../groups/group-members.service.js';
import { GroupsRepository } from '../groups/groups.repository.js';
import { groupUniqueProblem, GroupsService } from '../groups/groups.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { turnsFor } from '../platform/database/write-turns.js';
import { ApiError } from '../platform/http/api-error.js';
import type { IfMatch } from '../platform/http/etag.js';
import { scimProblem, scimStatusOf } from './scim-error.js';
import { MemberChanges, memberRefs } from './scim-group-members.js';
import { ScimGroupsRepository, type ScimGroupRow, type ScimMember } from './scim-groups.repository.js';
import { applyOperation, attributeOf, bodyDoc, type Doc, type DocSchema } from './scim-patch.js';
import { parsePatchBody, type PatchOperation } from './scim-patch-body.js';
import { listResponse, project, type ListQuery, type Selection } from './scim-query.js';
import { GROUP_SCHEMA, SCIM_BASE } from './scim-schemas.js';
import type { ScimAnswer } from './scim-users.service.js';

const GROUP_DOC: DocSchema = {
  urn: GROUP_SCHEMA,
  attributes: [
    { name: 'id', readOnly: true },
    { name: 'meta', readOnly: true },
    { name: 'displayName' },
    { name: 'externalId' },
    { name: 'members', multi: true, subs: ['value', 'type', 'display', '$ref'] },
  ],
};

const iso = (value: Date | string): string => new Date(value).toISOString();

function scimGroup(row: ScimGroupRow): Doc {
  return {
    schemas: [GROUP_SCHEMA],
    id: row.id,
    ...(row.external_id === null ? {} : { externalId: row.external_id }),
    displayName: row.name,
    members: row.members.map((member) => ({
      ...member,
      $ref: `${SCIM_BASE}/${member.type === 'User' ? 'Users' : 'Groups'}/${member.value}`,
    })),
    meta: {
      resourceType: 'Group',
      created: iso(row.created_at),
      lastModified: iso(row.updated_at),
      location: `${SCIM_BASE}/Groups/${row.id}`,
      version: `W/"${row.version}"`,
    },
  };
}

function groupFields(doc: Doc): { name: string; external_id: string | null } {
  const name = doc.displayName;
  if (typeof name !== 'string' || name.trim() === '' || name.trim().length > 100)
    throw scimProblem('invalidValue', 'displayName must be a string of 1–100 characters', 'displayName');
  const externalId = doc.externalId;
  if (
    externalId !== undefined &&
    externalId !== null &&
    (typeof externalId !== 'string' || externalId.length > 255 || externalId === '')
  )
    throw scimProblem('invalidValue', 'externalId must be a string of 1–255 characters', 'externalId');
  // eslint-disable-next-line no-control-regex -- exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(name + (typeof externalId === 'string' ? externalId : '')))
    throw scimProblem('invalidValue', 'displayName and externalId may hold no control character', 'displayName');
  return { name: name.trim(), external_id: typeof externalId === 'string' ? externalId : null };
}

const isMembers = (operation: PatchOperation): boolean =>
  operation.path !== undefined && attributeOf(GROUP_DOC, operation.path.attr)?.attribute.name === 'members';

/**
 * SCIM's Groups (part 6.19) over the admin API's groups and memberships: a write is the admin
 * API's own (`GroupsService.createIn`, `updateIn`, `GroupMembersService.addIn`, `removeIn`), all of
 * one request in one transaction. Where the admin API judges each member alone, SCIM is atomic:
 * the first member refused refuses the whole request and nothing is written.
 */
@Injectable()
export class ScimGroupsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly reads: ScimGroupsRepository,
    private readonly groups: GroupsRepository,
    private readonly writes: GroupsService,
    private readonly members: GroupMembersService,
  ) {}

  async list(query: ListQuery): Promise<Doc> {
    const withMembers = project({ members: [] }, query.selection).members !== undefined;
    const { total, rows } = await this.reads.page(query.filter, query.startIndex - 1, query.count, withMembers);
    return listResponse(
      total,
      query.startIndex,
      rows.map((row) => project(scimGroup(row), query.selection)),
    );
  }

  async get(id: number, selection: Selection): Promise<ScimAnswer> {
    const withMembers = project({ members: [] }, selection).members !== undefined;
    const row = await this.reads.read(id, withMembers);
    if (row === undefined) throw ApiError.notFound('GROUP_NOT_FOUND', id);
    return { resource: project(scimGroup(row), selection), version: row.version };
  }

  async create(actor: AuthContext, body: unknown): Promise<ScimAnswer> {
    const doc = bodyDoc(GROUP_DOC, body);
    const fields = groupFields(doc);
    const members = memberRefs(doc.members);
    const id = await this.write(
      fields,
      async (tx) => {
        const created = await this.writes.createIn(tx, actor, {
          name: fields.name,
          ...(fields.external_id === null ? {} : { external_id: fields.external_id }),
        });
        await this.changeMembers(tx, actor, created.id, { add: members, remove: [] });
        return created.id;
      },
      members.length,
    );
    return { ...(await this.answer(id)), created: true };
  }

  async replace(actor: AuthContext, id: number, body: unknown, ifMatch: IfMatch): Promise<ScimAnswer> {
    const doc = bodyDoc(GROUP_DOC, body, String(id));
    const fields = groupFields(doc);
    const wanted = memberRefs(doc.members);
    return this.change(actor, id, ifMatch, fields, wanted.length, async (tx, changes) => {
      changes.replace(wanted);
      return Promise.resolve(fields);
    });
  }

  async patch(actor: AuthContext, id: number, body: unknown, ifMatch: IfMatch): Promise<ScimAnswer> {
    const operations = parsePatchBody(body);
    return this.change(actor, id, ifMatch, undefined, membersNamed(operations), async (_tx, changes, current) => {
      const doc: Doc = {
        displayName: current.name,
        ...(current.external_id === null ? {} : { externalId: current.external_id }),
      };
      for (const operation of operations) {
        if (isMembers(operation)) {
          await changes.apply(operation, operation.value);
          continue;
        }
        if (operation.path === undefined && typeof operation.value === 'object' && operation.value !== null) {
          // A value without path may carry members beside the other attributes (`{"members": […]}`).
          const { members, rest } = splitMembers(operation.value as Doc);
          if (members !== undefined)
            await changes.apply({ op: operation.op, path: { text: 'members', attr: { attr: 'members' } } }, members);
          applyOperation(doc, GROUP_DOC, { ...operation, value: rest });
          continue;
        }
        applyOperation(doc, GROUP_DOC, operation);
      }
      return groupFields(doc);
    });
  }

  /** DELETE: as `DELETE /v1/admin/groups/{id}` (a soft delete: its members hold nothing through it). */
  async remove(_actor: AuthContext, id: number, ifMatch: IfMatch): Promise<void> {
    if ((await this.reads.read(id, false)) === undefined) throw ApiError.notFound('GROUP_NOT_FOUND', id);
    await this.writes.remove(id, ifMatch);
  }

  private async change(
    actor: AuthContext,
    id: number,
    ifMatch: IfMatch,
    given: { name: string; external_id: string | null } | undefined,
    /** How many members the request names (the turns its write takes). */
    named: number,
    work: (
      tx: Tx,
      changes: MemberChanges,
      current: { name: string; external_id: string | null },
    ) => Promise<{ name: string; external_id: string | null }>,
  ): Promise<ScimAnswer> {
    let fields = given;
    let unchanged = false;
    await this.write(
      () => fields,
      async (tx) => {
        const before = await this.groups.lockLive(tx, id);
        const changes = new MemberChanges(() => this.reads.members(tx.db, id));
        fields = await work(tx, changes, before);
        const after = await this.writes.updateIn(
          tx,
          actor,
          before,
          { name: fields.name, external_id: fields.external_id },
          ifMatch,
        );
        const wrote = await this.changeMembers(tx, actor, id, await changes.changes());
        unchanged = after === before && !wrote;
        return id;
      },
      named,
    );
    return { ...(await this.answer(id)), ...(unchanged ? { unchanged } : {}) };
  }

  /**
   * Removes then adds, through the admin API's own judgement; the first item refused refuses the
   * request (403 for a rule of part 5, else 400). A member already present, or already absent, is
   * no error. Answers whether anything was written.
   */
  private async changeMembers(
    tx: Tx,
    actor: AuthContext,
    groupId: number,
    changes: { add: readonly ScimMember[]; remove: readonly ScimMember[] },
  ): Promise<boolean> {
    const items = (members: readonly ScimMember[]): Item[] =>
      members.map((member, index) => ({
        index,
        user_id: member.type === 'User' ? Number(member.value) : null,
        group_id: member.type === 'Group' ? Number(member.value) : null,
      }));
    const removing = items(changes.remove);
    if (removing.length > 0) await this.members.removeIn(tx, groupId, removing, null);
    const adding = items(changes.add);
    if (adding.length > 0) {
      await this.members.addIn(tx, actor, groupId, adding, { expires_at: null, reason: null });
      const refused = adding.find((item) => item.error !== undefined)?.error;
      if (refused !== undefined)
        throw scimStatusOf(refused).status === 403 ? refused : scimProblem('invalidValue', refused.message, 'members');
    }
    return [...removing, ...adding].some((item) => item.status === 'added' || item.status === 'removed');
  }

  private write(
    fields:
      | (() => { name?: string; external_id?: string | null } | undefined)
      | { name?: string; external_id?: string | null },
    work: (tx: Tx) => Promise<number>,
    /** How many members the request names (the turns its write takes). */
    named: number,
  ): Promise<number> {
    return this.uow.run(work, { turns: turnsFor(named) }).catch((error: unknown) => {
      const given = typeof fields === 'function' ? fields() : fields;
      throw given === undefined ? error : groupUniqueProblem(error, given);
    });
  }

  /** The group as the write left it, read after the commit (its version counts the change of members). */
  private async answer(id: number): Promise<ScimAnswer> {
    const row = await this.reads.read(id);
    if (row === undefined) throw ApiError.notFound('GROUP_NOT_FOUND', id);
    return { resource: scimGroup(row), version: row.version };
  }
}

/** How many members a PATCH names: the entries of its operations' values (a value without path counts its `members`). */
function membersNamed(operations: readonly PatchOperation[]): number {
  let named = 0;
  for (const operation of operations) {
    const value =
      operation.path === undefined && typeof operation.value === 'object' && operation.value !== null
        ? splitMembers(operation.value as Doc).members
        : operation.value;
    named += Array.isArray(value) ? value.length : 1;
  }
  return named;
}

function splitMembers(value: Doc): { members: unknown; rest: Doc } {
  const rest: Doc = {};
  let members: unknown;
  for (const [key, child] of Object.entries(value)) {
    if (key.toLowerCase() === 'members') members = child;
    else rest[key] = child;
  }
  return { members, rest };
}
