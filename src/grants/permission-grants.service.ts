import { Injectable } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { PermissionReferences } from './permission-references.repository.js';
import { UserReferences } from '../users/user-references.repository.js';
import { NOT_REVOKED, AuditService } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { AuthorizationService, earlierEnd } from '../access-model/authorization.service.js';
import { assertMayWriteUser, assertNotSelf } from '../access-model/user-rules.js';
import { futureTimestamp } from '../platform/http/timestamps.js';
import { ApiError } from '../platform/http/api-error.js';
import { ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { respondWith } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { GrantPermissionDto, PermissionGrantDto, RevokePermissionDto } from './dto/permission-grant.dto.js';
import { PermissionGrantsRepository, type GrantHolder } from './permission-grants.repository.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import { holderName, holderOf, type Holder } from '../access-model/holder.js';
import { GroupsRepository } from '../groups/groups.repository.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

/** Judges `is_active` now: a cached grant past its `expires_at` stops being active at once. */
function withLiveState(grant: PermissionGrantDto): PermissionGrantDto {
  const expired = grant.expires_at !== null && Date.parse(grant.expires_at) <= Date.now();
  return { ...grant, is_active: grant.revoked_at === null && !expired };
}

/** A permission grant an access review revokes. */
export interface ReviewedGrant {
  readonly id: number;
  readonly holder: Holder;
  readonly permission_id: number;
  readonly permission_code: string;
}

/** Permission grants (part 6.5): append-only rows; granting again makes a new row. */
@Injectable()
export class PermissionGrantsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly permissionReferences: PermissionReferences,
    private readonly userReferences: UserReferences,
    private readonly audit: AuditService,
    private readonly authorization: AuthorizationService,
    private readonly grants: PermissionGrantsRepository,
    private readonly access: AccessWatch,
    private readonly groups: GroupsRepository,
    private readonly groupAccess: GroupAccess,
  ) {}

  list(query: Record<string, unknown>): Promise<ListResponse<PermissionGrantDto>> {
    return this.grants.list(query);
  }

  async get(id: number, prefetched?: Prefetched): Promise<ResourceResponse<PermissionGrantDto>> {
    const read = await this.grants.read(id, prefetched);
    if (read === undefined) throw ApiError.notFound('PERMISSION_GRANT_NOT_FOUND', id);
    return new ResourceResponse(withLiveState(read.value), { cache: read.cache, version: read.entry.version });
  }

  async grant(actor: AuthContext, dto: GrantPermissionDto): Promise<ResourceResponse<PermissionGrantDto>> {
    const asked = dto.expires_at === undefined ? null : futureTimestamp(dto.expires_at, 'expires_at');
    const holder = holderOf(dto);
    if (holder.user_id !== undefined) assertNotSelf(actor, holder.user_id, 'grant');
    const row = await this.uow.run(async (tx) => {
      const { code, reached } = await this.assertTarget(tx, actor, holder, dto.permission_id);
      // What is handed on lasts no longer than the actor's own way to it (part 5): the earlier end.
      const expiresAt = earlierEnd(asked, await this.authorization.delegationLimit(actor, code));
      await this.grants.lockPair(tx, holder, dto.permission_id);
      const active = await this.grants.activeId(tx, holder, dto.permission_id);
      if (active !== undefined) {
        throw new ApiError(
          'PERMISSION_ALREADY_GRANTED',
          `${holderName(holder)} already holds an active grant of permission ${dto.permission_id}`,
          { grant_id: active, ...holder, permission_id: dto.permission_id },
        );
      }
      await this.access.watch(tx, { users: reached, devices: [], permissions: [code] });
      const created = await this.grants.grant(tx, {
        holder,
        permission_id: dto.permission_id,
        reason: dto.reason ?? null,
        expires_at: expiresAt,
        granted_by: tx.actor,
      });
      await this.audit.record(tx, 'permission_grant.grant', created.id, {
        reason: dto.reason ?? null,
        changes: {
          ...(holder.user_id === undefined
            ? { group_id: [null, created.group_id] }
            : { user_id: [null, created.user_id] }),
          permission_code: [null, created.permission_code],
          expires_at: [null, expiresAt?.toISOString() ?? null],
        },
      });
      return created;
    });
    return respondWith(row, { status: 201, location: `/v1/admin/permission-grants/${row.id}` });
  }

  /** Stamps the revocation of the active grant of the pair; none active is 404. */
  async revoke(actor: AuthContext, dto: RevokePermissionDto): Promise<ResourceResponse<PermissionGrantDto>> {
    const holder = holderOf(dto);
    const row = await this.uow.run(async (tx) => {
      const { code, reached } = await this.assertTarget(tx, actor, holder, dto.permission_id, true);
      await this.grants.lockPair(tx, holder, dto.permission_id);
      const active = await this.grants.activeId(tx, holder, dto.permission_id);
      if (active === undefined) {
        throw new ApiError(
          'PERMISSION_GRANT_NOT_FOUND',
          `${holderName(holder)} holds no active grant of permission ${dto.permission_id}`,
          { ...holder, permission_id: dto.permission_id },
        );
      }
      await this.access.watch(tx, { users: reached, devices: [], permissions: [code] });
      const revoked = await this.grants.revoke(tx, active, tx.actor, dto.reason ?? null);
      await this.audit.record(tx, 'permission_grant.revoke', active, {
        before: NOT_REVOKED,
        reason: dto.reason ?? null,
        changes: { revoked_at: [null, revoked.revoked_at] },
      });
      return revoked;
    });
    return respondWith(row);
  }

  /**
   * An access review's close (part 6.16): revokes each grant of `grants` that is still the live
   * grant of its pair, as `revoke` writes it (pair lock, access watched, audit event with
   * `reason`). The review's decisions authorized them. Answers the ids it revoked; the others had
   * already stopped allowing.
   */
  async revokeReviewed(tx: Tx, grants: readonly ReviewedGrant[], reason: string): Promise<Set<number>> {
    const revoked = new Set<number>();
    if (grants.length === 0) return revoked;
    const groups = grants.flatMap((grant) => (grant.holder.group_id === undefined ? [] : [grant.holder.group_id]));
    await this.access.watch(tx, {
      users: [
        ...grants.flatMap((grant) => (grant.holder.user_id === undefined ? [] : [grant.holder.user_id])),
        ...(await this.groupAccess.reached(tx, groups)),
      ],
      devices: [],
      permissions: [...new Set(grants.map((grant) => grant.permission_code))],
    });
    // Users' pairs, then groups', each in id order: concurrent closes lock pairs in one order.
    const order = (holder: Holder): [number, number] =>
      holder.group_id === undefined ? [0, holder.user_id] : [1, holder.group_id];
    const ordered = [...grants].sort((a, b) => {
      const [x, y] = [order(a.holder), order(b.holder)];
      return x[0] - y[0] || x[1] - y[1] || a.permission_id - b.permission_id;
    });
    for (const grant of ordered) {
      const holder = grant.holder;
      await this.grants.lockPair(tx, holder, grant.permission_id);
      if ((await this.grants.activeId(tx, holder, grant.permission_id)) !== grant.id) continue;
      const row = await this.grants.revoke(tx, grant.id, tx.actor, reason);
      await this.audit.record(tx, 'permission_grant.revoke', grant.id, {
        before: NOT_REVOKED,
        reason,
        changes: { revoked_at: [null, row.revoked_at] },
      });
      revoked.add(grant.id);
    }
    return revoked;
  }

  /**
   * 404s for the holder and permission, then (granting) the rules of part 5: a grant to a user is a
   * write on that user (role rank); a grant to a group hands it to every user the group reaches
   * (self, rank and delegation through groups). Revoking is not limited. Returns the permission's
   * code and the users whose access may change.
   */
  private async assertTarget(
    tx: Tx,
    actor: AuthContext,
    holder: GrantHolder,
    permissionId: number,
    revoking = false,
  ): Promise<{ code: string; reached: number[] }> {
    if (holder.group_id !== undefined) {
      const reached = await this.groupAccess.reached(tx, [holder.group_id]);
      // Once the reach is held: a deletion in flight has committed by now (404), not been written past.
      await this.groups.liveGroup(tx.db, holder.group_id);
      const permission = await this.permissionReferences.permission(tx.db, permissionId);
      if (!revoking)
        await this.groupAccess.assertMayConfer(tx, actor, { reached, roles: [], permissions: [permission.code] });
      return { code: permission.code, reached };
    }
    const user = await this.userReferences.liveUser(tx.db, holder.user_id);
    const permission = await this.permissionReferences.permission(tx.db, permissionId);
    assertMayWriteUser(actor, user);
    return { code: permission.code, reached: [holder.user_id] };
  }
}
