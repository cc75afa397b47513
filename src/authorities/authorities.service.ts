import { Injectable } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import { holderName, holderOf, type Holder } from '../access-model/holder.js';
import { GroupsRepository } from '../groups/groups.repository.js';
import { AuthorityReferences } from './authority-references.repository.js';
import { UserReferences } from '../users/user-references.repository.js';
import { creationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, diffChanges } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { AuthorizationService } from '../access-model/authorization.service.js';
import { deviceRowScope } from '../access-model/row-scope.js';
import { ApiError } from '../platform/http/api-error.js';
import { futureTimestamp } from '../platform/http/timestamps.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { respondWith } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import {
  assertNotExtendingOwn,
  AuthoritiesRepository,
  ownerProtected,
  type AuthorityRow,
} from './authorities.repository.js';
import type { AuthorityDto, CreateAuthorityDto, UpdateAuthorityDto } from './dto/authority.dto.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

export const AUTHORITY_AUDITED_FIELDS = [
  'device_id',
  'user_id',
  'group_id',
  'owner',
  'is_active',
  'expires_at',
  'label',
] as const satisfies readonly (keyof AuthorityRow)[];

/** Authorities: reads, creation and PATCH (part 6.3); lifecycle actions are in `AuthorityActionsService`. */
@Injectable()
export class AuthoritiesService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly authorityReferences: AuthorityReferences,
    private readonly userReferences: UserReferences,
    private readonly authorities: AuthoritiesRepository,
    private readonly audit: AuditService,
    private readonly authorization: AuthorizationService,
    private readonly access: AccessWatch,
    private readonly groups: GroupsRepository,
    private readonly groupAccess: GroupAccess,
  ) {}

  async list(actor: AuthContext, query: Record<string, unknown>): Promise<ListResponse<AuthorityDto>> {
    return this.authorities.list(
      query,
      await deviceRowScope(this.authorization, actor, 'authorities.read', 'device_id'),
    );
  }

  get(id: number, includeDeleted: boolean, prefetched?: Prefetched): Promise<ResourceResponse<AuthorityDto>> {
    return this.authorities.detail(id, includeDeleted, prefetched);
  }

  /**
   * 201, `owner: false`, `is_active: true`; an existing pair (deleted or not) is 409 with its id.
   * For a user, or for a group (v1.3: every member it reaches holds it); nobody creates one for
   * itself, nor for a group it is (through nesting) a member of.
   */
  async create(actor: AuthContext, dto: CreateAuthorityDto): Promise<ResourceResponse<AuthorityDto>> {
    const expiresAt = dto.expires_at === undefined ? null : futureTimestamp(dto.expires_at, 'expires_at');
    const holder = holderOf(dto);
    await this.assertReferences(dto.device_id, holder);
    await this.authorization.assertAllowed(actor, 'authorities.create', dto.device_id);
    if (holder.user_id === actor.user_id) throw createForSelf(actor.user_id);
    const row = await this.uow.run(async (tx) => {
      if (holder.group_id !== undefined) {
        const reached = await this.groupAccess.reached(tx, [holder.group_id]);
        // Once the reach is held: a deletion in flight has committed by now (404), not been written past.
        await this.groups.liveGroup(tx.db, holder.group_id);
        if (reached.includes(actor.user_id)) throw createForSelf(actor.user_id);
      }
      const stamp = creationStamp(tx);
      // ON CONFLICT DO NOTHING: a concurrent creator of the same pair waits for the winner and
      // then sees its committed row, so exactly one request gets the 201.
      const created = await this.authorities.insert(
        tx,
        {
          device_id: dto.device_id,
          user_id: holder.user_id ?? null,
          group_id: holder.group_id ?? null,
          expires_at: expiresAt,
          label: dto.label ?? null,
          ...stamp,
          assigned_by: stamp.created_by,
        },
        holder.group_id === undefined
          ? '(device_id, user_id) DO NOTHING'
          : '(device_id, group_id) WHERE group_id IS NOT NULL DO NOTHING',
      );
      if (created === undefined) throw await this.alreadyExists(tx, dto.device_id, holder);
      await this.audit.record(tx, 'authority.create', created.id, {
        changes: diffChanges(null, created, AUTHORITY_AUDITED_FIELDS),
      });
      return created;
    });
    return respondWith(row, { status: 201, location: `/v1/admin/authorities/${row.id}` });
  }

  async update(
    actor: AuthContext,
    id: number,
    dto: UpdateAuthorityDto,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<AuthorityDto>> {
    const expiresAt =
      dto.expires_at === undefined || dto.expires_at === null
        ? dto.expires_at
        : futureTimestamp(dto.expires_at, 'expires_at');
    const row = await this.uow.run(async (tx) => {
      const before = await this.authorities.lockLive(tx, id);
      // An expiry on the owner's authority would strip the owner of every right on the device.
      if (before.owner && expiresAt !== undefined && expiresAt !== null) throw ownerProtected(before, 'expire');
      if (expiresAt !== undefined && extends_(before.expires_at, expiresAt)) {
        assertNotExtendingOwn(
          actor,
          before,
          this.authorization.decideGlobally(actor, 'authorities.update').allowed,
          await this.authorities.usersHolding(tx, before),
        );
      }
      assertIfMatch(ifMatch, before.version);
      const wanted = {
        ...before,
        ...(expiresAt === undefined ? {} : { expires_at: expiresAt?.toISOString() ?? null }),
        ...(dto.label === undefined ? {} : { label: dto.label }),
      };
      const changes = diffChanges(before, wanted, ['expires_at', 'label']);
      if (Object.keys(changes).length === 0) return before;
      if ('expires_at' in changes)
        await this.access.watch(tx, {
          users: await this.authorities.usersHolding(tx, before),
          devices: [before.device_id],
        });
      // Only the fields that change: a label alone leaves the device's authority set alone.
      const after = await this.authorities.patch(tx, id, {
        ...('expires_at' in changes ? { expires_at: wanted.expires_at } : {}),
        ...('label' in changes ? { label: wanted.label } : {}),
        ...updateStamp(tx),
      });
      await this.audit.record(tx, 'authority.update', id, { before, changes });
      return after;
    });
    return respondWith(row);
  }

  private async assertReferences(deviceId: number, holder: Holder): Promise<void> {
    await this.authorityReferences.device(this.uow.reader, deviceId);
    if (holder.group_id !== undefined) await this.groups.liveGroup(this.uow.reader, holder.group_id);
    else await this.userReferences.liveUser(this.uow.reader, holder.user_id);
  }

  private async alreadyExists(tx: Tx, deviceId: number, holder: Holder): Promise<ApiError> {
    const existing = await this.authorities.findPair(tx, deviceId, holder);
    return new ApiError(
      'AUTHORITY_ALREADY_EXISTS',
      `${holderName(holder)} already has an authority on device ${deviceId}${existing?.is_deleted === true ? ' (deleted; restore it)' : ''}`,
      {
        authority_id: existing?.id ?? null,
        device_id: deviceId,
        ...holder,
        is_deleted: existing?.is_deleted ?? false,
      },
    );
  }
}

function createForSelf(userId: number): ApiError {
  return new ApiError('SELF_ACTION_FORBIDDEN', 'You cannot create an authority for yourself', {
    action: 'create_authority',
    user_id: userId,
  });
}

/** Whether a new `expires_at` lasts longer than the current one (null is for ever). */
function extends_(current: string | null, next: Date | null): boolean {
  if (current === null) return false;
  return next === null || next.getTime() > Date.parse(current);
}
