import { Injectable } from '@nestjs/common';
import { AuthorityReferences } from '../authorities/authority-references.repository.js';
import { PermissionReferences } from './permission-references.repository.js';
import { AuditService } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { AuthorizationService } from '../platform/auth/authorization.service.js';
import { deviceRowScope } from '../platform/auth/row-scope.js';
import { ApiError } from '../platform/http/api-error.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { currentActorId } from '../platform/http/request-context.js';
import { NoContent, ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { respondWith } from '../platform/projections/resource-table.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { AuthorityPermissionsRepository } from './authority-permissions.repository.js';
import type { AuthorityPermissionDto, CreateAuthorityPermissionDto } from './dto/authority-permission.dto.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

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
  ) {}

  async list(actor: AuthContext, query: Record<string, unknown>): Promise<ListResponse<AuthorityPermissionDto>> {
    return this.rows.list(
      query,
      await deviceRowScope(this.authorization, actor, 'authority_permissions.read', 'a.device_id'),
    );
  }

  get(id: number, prefetched?: Prefetched): Promise<ResourceResponse<AuthorityPermissionDto>> {
    return this.rows.detail(id, false, prefetched);
  }

  async create(
    actor: AuthContext,
    dto: CreateAuthorityPermissionDto,
  ): Promise<ResourceResponse<AuthorityPermissionDto>> {
    const authority = await this.authorityReferences.liveAuthority(this.uow.reader, dto.authority_id);
    const permission = await this.permissionReferences.permission(this.uow.reader, dto.permission_id);
    if (!permission.device_scoped) throw notDeviceScoped(dto.permission_id, permission.code);
    const target = { device_id: authority.device_id, holder: authority.user_id, code: permission.code };
    await this.authorization.assertAllowed(actor, 'authority_permissions.grant', target.device_id);
    if (target.holder === actor.user_id) {
      throw new ApiError(
        'SELF_ACTION_FORBIDDEN',
        'You cannot grant an authority permission to an authority of your own',
        { action: 'grant', authority_id: dto.authority_id, user_id: actor.user_id },
      );
    }
    await this.authorization.assertMayDelegate(actor, target.code, target.device_id);
    const row = await this.uow.run(async (tx) => {
      await this.rows.lockAuthorities(tx, [dto.authority_id]);
      const created = await this.rows.grant(tx, dto.authority_id, dto.permission_id, currentActorId());
      if (created === undefined) {
        throw new ApiError(
          'AUTHORITY_PERMISSION_EXISTS',
          `Authority ${dto.authority_id} already holds ${target.code}`,
          {
            authority_permission_id: await this.rows.activeId(tx, dto.authority_id, dto.permission_id),
            authority_id: dto.authority_id,
            permission_id: dto.permission_id,
          },
        );
      }
      await this.audit.record(tx, 'authority_permission.grant', created.id, {
        changes: { authority_id: [null, created.authority_id], permission_code: [null, created.permission_code] },
      });
      return created;
    });
    return respondWith(row, { status: 201, location: `/v1/admin/authority-permissions/${row.id}` });
  }

  /** Revokes (200 with the row); 204 when it already was. Live is version 1, revoked 2, for `If-Match`. */
  revoke(id: number, ifMatch: IfMatch): Promise<ResourceResponse<AuthorityPermissionDto> | NoContent> {
    return this.uow.run(async (tx) => {
      const revoked = await this.rows.revoke(tx, id, currentActorId(), (version) => assertIfMatch(ifMatch, version));
      if (revoked === 'already') return NoContent.instance;
      await this.audit.record(tx, 'authority_permission.revoke', id, {
        changes: { revoked_at: [null, revoked.revoked_at] },
      });
      return respondWith(revoked);
    });
  }
}
