import { Injectable } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import { outranks } from '../access-model/user-rules.js';
import { creationStamp, deletionStamp, restorationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, diffChanges } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { ROLE } from '../platform/auth/roles.js';
import { ApiError } from '../platform/http/api-error.js';
import { isUniqueViolation } from '../platform/http/error-mapping.js';
import { assertIfMatch, unchanged, type IfMatch } from '../platform/http/etag.js';
import type { ListResponse, NoContent, ResourceResponse } from '../platform/http/responses.js';
import { respondWith } from '../platform/projections/resource-table.js';
import type { Prefetched } from '../platform/projections/prefetched.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { CreateGroupDto, GroupDto, UpdateGroupDto } from './dto/group.dto.js';
import { GroupsRepository, type GroupRow } from './groups.repository.js';

const AUDITED_FIELDS = ['name', 'description', 'role_id', 'external_id'] as const satisfies readonly (keyof GroupRow)[];

/** 409s of the groups' unique keys, from the violated index. */
export function groupUniqueProblem(error: unknown, values: { name?: string; external_id?: string | null }): unknown {
  if (isUniqueViolation(error, 'groups_name_key'))
    return new ApiError('GROUP_NAME_TAKEN', `A group named ${values.name ?? ''} already exists`, { name: values.name });
  if (isUniqueViolation(error, 'groups_external_id_key'))
    return new ApiError('EXTERNAL_ID_TAKEN', `Another group has external id ${values.external_id ?? ''}`, {
      external_id: values.external_id,
      resource_type: 'group',
    });
  return error;
}

/** Groups (part 6.18): reads, creation, PATCH, soft delete and restore; members are `GroupMembersService`'s. */
@Injectable()
export class GroupsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly groups: GroupsRepository,
    private readonly audit: AuditService,
    private readonly access: AccessWatch,
    private readonly groupAccess: GroupAccess,
  ) {}

  list(query: Record<string, unknown>): Promise<ListResponse<GroupDto>> {
    return this.groups.list(query);
  }

  get(id: number, includeDeleted: boolean, prefetched?: Prefetched): Promise<ResourceResponse<GroupDto>> {
    return this.groups.detail(id, includeDeleted, prefetched);
  }

  /** 201; a role is conferred only by an actor who outranks it (the group has no member yet). */
  async create(actor: AuthContext, dto: CreateGroupDto): Promise<ResourceResponse<GroupDto>> {
    const row = await this.uow
      .run((tx) => this.createIn(tx, actor, dto))
      .catch((error: unknown) => {
        throw groupUniqueProblem(error, dto);
      });
    return respondWith(row, { status: 201, location: `/v1/admin/groups/${row.id}` });
  }

  /** A new group with its audit event, in the caller's transaction (SCIM's writes, part 6.19). */
  async createIn(tx: Tx, actor: AuthContext, dto: CreateGroupDto): Promise<GroupRow> {
    if (dto.role_id !== undefined) this.groupAccess.assertMayConferRole(actor, dto.role_id);
    const created = await this.groups.insert(tx, {
      name: dto.name,
      description: dto.description ?? null,
      role_id: dto.role_id ?? null,
      external_id: dto.external_id ?? null,
      ...creationStamp(tx),
    });
    if (created === undefined) throw new Error('group insert returned no row');
    await this.audit.record(tx, 'group.create', created.id, {
      changes: diffChanges(null, created, AUDITED_FIELDS),
    });
    return created;
  }

  /**
   * A new role is conferred on every user the group reaches (self, rank over each of them and over
   * the old and new roles); taking the role away (null) is not limited. Previewable.
   */
  async update(
    actor: AuthContext,
    id: number,
    dto: UpdateGroupDto,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<GroupDto>> {
    const row = await this.uow
      .run(async (tx) => this.updateIn(tx, actor, await this.groups.lockLive(tx, id), dto, ifMatch))
      .catch((error: unknown) => {
        throw groupUniqueProblem(error, dto);
      });
    return respondWith(row);
  }

  /** A PATCH of the locked live group `before`, in the caller's transaction; `before` when nothing would change. */
  async updateIn(
    tx: Tx,
    actor: AuthContext,
    before: GroupRow,
    dto: UpdateGroupDto,
    ifMatch: IfMatch,
  ): Promise<GroupRow> {
    const id = before.id;
    assertIfMatch(ifMatch, before.version);
    const wanted: GroupRow = {
      ...before,
      ...(dto.name === undefined ? {} : { name: dto.name }),
      ...(dto.description === undefined ? {} : { description: dto.description }),
      ...(dto.role_id === undefined ? {} : { role_id: dto.role_id }),
      ...(dto.external_id === undefined ? {} : { external_id: dto.external_id }),
    };
    const changes = diffChanges(before, wanted, AUDITED_FIELDS);
    if (Object.keys(changes).length === 0) return before;
    let reached: number[] = [];
    if ('role_id' in changes) {
      reached = await this.groupAccess.reached(tx, [id]);
      if (wanted.role_id !== null) await this.assertMayChangeRole(tx, actor, before.role_id, wanted.role_id, reached);
      await this.access.watch(tx, { users: reached });
    }
    const after = await this.groups.patch(tx, id, {
      ...('name' in changes ? { name: wanted.name } : {}),
      ...('description' in changes ? { description: wanted.description } : {}),
      ...('role_id' in changes ? { role_id: wanted.role_id } : {}),
      ...('external_id' in changes ? { external_id: wanted.external_id } : {}),
      ...updateStamp(tx),
    });
    this.groupAccess.changed(tx, reached);
    await this.audit.record(tx, 'group.update', id, { before, changes });
    return after;
  }

  /** From this instant no member holds anything through the group, and it stops nesting. Previewable. */
  remove(id: number, ifMatch: IfMatch): Promise<ResourceResponse<GroupDto> | NoContent> {
    return this.uow.run(async (tx) => {
      const before = await this.groups.lock(tx, id);
      if (before.is_deleted) return unchanged(ifMatch, before.version);
      assertIfMatch(ifMatch, before.version);
      const reached = await this.groupAccess.reached(tx, [id]);
      await this.access.watch(tx, { users: reached });
      const after = await this.groups.patch(tx, id, deletionStamp(tx));
      this.groupAccess.changed(tx, reached);
      await this.audit.record(tx, 'group.delete', id, { before, changes: { is_deleted: [false, true] } });
      return respondWith(after);
    });
  }

  /**
   * The group's memberships and rights return: judged as handing them again to every user it
   * reaches (the rules of part 5 through groups), since a restore gives as much as an addition.
   */
  restore(actor: AuthContext, id: number, ifMatch: IfMatch): Promise<ResourceResponse<GroupDto> | NoContent> {
    return this.uow.run(async (tx) => {
      const before = await this.groups.lock(tx, id);
      if (!before.is_deleted) return unchanged(ifMatch, before.version);
      assertIfMatch(ifMatch, before.version);
      const reached = await this.groupAccess.reached(tx, [id]);
      await this.access.watch(tx, { users: reached });
      const after = await this.groups.patch(tx, id, restorationStamp(tx));
      await this.groupAccess.assertMayConfer(tx, actor, {
        reached,
        ...(await this.groupAccess.conferredBy(tx, id)),
      });
      this.groupAccess.changed(tx, reached);
      await this.audit.record(tx, 'group.restore', id, { before, changes: { is_deleted: [true, false] } });
      return respondWith(after);
    });
  }

  /** Giving a role: the actor outranks the old and new roles and every user reached, and is not one of them. */
  private async assertMayChangeRole(
    tx: Tx,
    actor: AuthContext,
    from: number | null,
    to: number,
    reached: readonly number[],
  ): Promise<void> {
    if (from !== null && actor.role.id !== ROLE.super_admin && !outranks(actor.role.id, from))
      throw new ApiError(
        'ROLE_ESCALATION_FORBIDDEN',
        `Your role (${actor.role.code}) must outrank both the old and the new role to change a role`,
        { target_role_id: from },
      );
    await this.groupAccess.assertMayConfer(tx, actor, { reached, roles: [to], permissions: [] });
  }
}
