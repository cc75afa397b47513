import { Injectable } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import type { AccessScope } from '../access-model/access-snapshot.repository.js';
import { AuthorityReferences } from '../authorities/authority-references.repository.js';
import { PermissionReferences } from './permission-references.repository.js';
import { NOT_REVOKED, AuditService } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { AuthorizationService } from '../access-model/authorization.service.js';
import { deviceRowScope } from '../access-model/row-scope.js';
import { ApiError } from '../platform/http/api-error.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { NoContent, ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { respondWith, withoutVersion } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { AuthorityPermissionsRepository, type AuthorityPermissionRow } from './authority-permissions.repository.js';
import type { AuthorityPermissionDto, CreateAuthorityPermissionDto } from './dto/authority-permission.dto.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

/** Judges `is_active` now: a cached row past its `expires_at` stops being active at once. */
function withLiveState(row: AuthorityPermissionDto): AuthorityPermissionDto {
  const expired = row.expires_at !== null && Date.parse(row.expires_at) <= Date.now();
  return { ...row, is_active: row.revoked_at === null && !expired };
}

/** What an access-request approval grants: the permission on the authority, until `expiresAt`. */
export interface ExpiringGrant {
  readonly authorityId: number;
  readonly permissionId: number;
  /** Must be in the future; the row allows nothing from this instant on. */
  readonly expiresAt: Date;
  /** Recorded as `granted_by` (the approver); the audit event's actor is the request's. */
  readonly actorId: number | null;
  readonly reason: string | null;
}

export function notDeviceScoped(permissionId: number, code: string): ApiError {
  return new ApiError(
    'PERMISSION_NOT_DEVICE_SCOPED',
    `${code} is not a device-scoped permission; grant it to the user instead`,
    { permission_id: permissionId, permission_code: code },
  );
}

/** Authority permissions, one at a time (part 6.6); the bulk routes are in `BulkAuthorityPermissionsService`. */
@Injectable()
export class AuthorityPermissionsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly rows: AuthorityPermissionsRepository,
    private readonly audit: AuditService,
    private readonly authorization: AuthorizationService,
    private readonly authorityReferences: AuthorityReferences,
    private readonly permissionReferences: PermissionReferences,
    private readonly access: AccessWatch,
    private readonly groupAccess: GroupAccess,
  ) {}

  async list(actor: AuthContext, query: Record<string, unknown>): Promise<ListResponse<AuthorityPermissionDto>> {
    return this.rows.list(
      query,
      await deviceRowScope(this.authorization, actor, 'authority_permissions.read', 'a.device_id'),
    );
  }

  async get(id: number, prefetched?: Prefetched): Promise<ResourceResponse<AuthorityPermissionDto>> {
    const read = await this.rows.read(id, prefetched);
    if (read === undefined) throw ApiError.notFound('AUTHORITY_PERMISSION_NOT_FOUND', id);
    return new ResourceResponse(withLiveState(read.value), { cache: read.cache, version: read.entry.version });
  }

  async create(
    actor: AuthContext,
    dto: CreateAuthorityPermissionDto,
  ): Promise<ResourceResponse<AuthorityPermissionDto>> {
    const authority = await this.authorityReferences.liveAuthority(this.uow.reader, dto.authority_id);
    const permission = await this.permissionReferences.permission(this.uow.reader, dto.permission_id);
    if (!permission.device_scoped) throw notDeviceScoped(dto.permission_id, permission.code);
    const target = { device_id: authority.device_id, code: permission.code };
    await this.authorization.assertAllowed(actor, 'authority_permissions.grant', target.device_id);
    // What is handed on lasts no longer than the actor's own way to it (a just-in-time right
    // handed on ends with it: it cannot be laundered into a permanent one through a second account).
    // Asked before the write (it reads the actor's own ways), answered after the self and rank
    // rules, which refuse first.
    const limit = this.authorization.delegationLimit(actor, target.code, target.device_id).then(
      (until) => ({ until }),
      (error: unknown) => ({ error }),
    );
    const row = await this.uow.run(async (tx) => {
      // A group's authority is held by every user the group reaches: the self and rank rules
      // apply to each, judged in the write on the reach it holds (a user joining the group
      // meanwhile waits for it, or is judged; read before the write, a joining admin was not).
      await this.rows.lockAuthorities(tx, [dto.authority_id]);
      const users = await this.usersHolding(authority, tx);
      if (users.includes(actor.user_id)) {
        throw new ApiError(
          'SELF_ACTION_FORBIDDEN',
          'You cannot grant an authority permission to an authority of your own',
          { action: 'grant', authority_id: dto.authority_id, user_id: actor.user_id },
        );
      }
      if (authority.group_id !== null) {
        const [problem] = await this.groupAccess.judge(tx, actor, { roles: [], permissions: [] }, [users]);
        if (problem !== undefined) throw problem;
      }
      const delegation = await limit;
      if ('error' in delegation) throw delegation.error;
      return this.grantIn(tx, {
        holder: { users, devices: [authority.device_id], permissions: [target.code] },
        authorityId: dto.authority_id,
        permissionId: dto.permission_id,
        code: target.code,
        expiresAt: delegation.until,
        actorId: tx.actor,
        reason: null,
      });
    });
    return respondWith(row, { status: 201, location: `/v1/admin/authority-permissions/${row.id}` });
  }

  /**
   * For an access-request approval, inside its transaction: grants the permission on the
   * authority until `expiresAt`, the same write as `POST /authority-permissions` (the
   * authority's lock, one audit event `authority_permission.grant`, the device's authority set
   * rebuilt after commit). The caller has judged who may approve (route, self, delegation); this
   * checks only the target: 404 for a deleted authority or an unknown permission, 422
   * `PERMISSION_NOT_DEVICE_SCOPED`, 409 `AUTHORITY_PERMISSION_EXISTS` when the authority already
   * holds it unexpired.
   */
  async grantExpiring(tx: Tx, grant: ExpiringGrant): Promise<AuthorityPermissionDto> {
    if (!(grant.expiresAt.getTime() > Date.now())) throw new Error('grantExpiring: expiresAt must be in the future');
    const authority = await this.authorityReferences.liveAuthority(tx.db, grant.authorityId);
    const permission = await this.permissionReferences.permission(tx.db, grant.permissionId);
    if (!permission.device_scoped) throw notDeviceScoped(grant.permissionId, permission.code);
    await this.rows.lockAuthorities(tx, [grant.authorityId]);
    const users = await this.usersHolding(authority, tx);
    const holder = { users, devices: [authority.device_id], permissions: [permission.code] };
    const row = await this.grantIn(tx, { ...grant, code: permission.code, holder });
    return withoutVersion(row);
  }

  /** The users holding an authority: its user, or every user its group reaches. */
  private usersHolding(
    authority: { readonly user_id: number | null; readonly group_id: number | null },
    tx: Tx,
  ): Promise<number[]> {
    if (authority.user_id !== null) return Promise.resolve([authority.user_id]);
    return authority.group_id === null ? Promise.resolve([]) : this.groupAccess.reached(tx, [authority.group_id]);
  }

  /**
   * The one grant write, on the authority its caller locked (`lockAuthorities`, before reading who
   * holds it): insert unless held unexpired (409), audit.
   */
  private async grantIn(
    tx: Tx,
    grant: Omit<ExpiringGrant, 'expiresAt'> & {
      readonly code: string;
      readonly expiresAt: Date | null;
      readonly holder: AccessScope;
    },
  ): Promise<AuthorityPermissionRow> {
    await this.access.watch(tx, grant.holder);
    const created = await this.rows.grant(tx, grant.authorityId, grant.permissionId, grant.actorId, grant.expiresAt);
    if (created === undefined) {
      throw new ApiError('AUTHORITY_PERMISSION_EXISTS', `Authority ${grant.authorityId} already holds ${grant.code}`, {
        authority_permission_id: await this.rows.activeId(tx, grant.authorityId, grant.permissionId),
        authority_id: grant.authorityId,
        permission_id: grant.permissionId,
      });
    }
    const changes: Record<string, readonly [unknown, unknown]> = {
      authority_id: [null, created.authority_id],
      permission_code: [null, created.permission_code],
    };
    if (grant.expiresAt !== null) changes.expires_at = [null, grant.expiresAt.toISOString()];
    await this.audit.record(tx, 'authority_permission.grant', created.id, { reason: grant.reason, changes });
    return created;
  }

  /** Revokes (200 with the row); 204 when it already was. Live is version 1, revoked 2, for `If-Match`. */
  revoke(id: number, ifMatch: IfMatch): Promise<ResourceResponse<AuthorityPermissionDto> | NoContent> {
    return this.uow.run(async (tx) => {
      const holder = await this.rows.holderOf(tx, id);
      if (holder !== undefined)
        await this.access.watch(tx, {
          users: await this.usersHolding(holder, tx),
          devices: [holder.device_id],
          permissions: [holder.code],
        });
      const revoked = await this.rows.revoke(tx, id, tx.actor, (version) => assertIfMatch(ifMatch, version));
      if (revoked === 'already') return NoContent.instance;
      await this.audit.record(tx, 'authority_permission.revoke', id, {
        before: NOT_REVOKED,
        changes: { revoked_at: [null, revoked.revoked_at] },
      });
      return respondWith(revoked);
    });
  }
}
