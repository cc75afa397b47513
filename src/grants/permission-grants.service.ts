import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import type { AuthContext } from '../auth/auth-context.js';
import { AuthContextService } from '../auth/auth-context.service.js';
import { AuthorizationService } from '../auth/authorization.service.js';
import { assertMayWriteUser, assertNotSelf } from '../auth/user-rules.js';
import { bumpProjectionVersion } from '../database/projection-versions.js';
import { futureTimestamp } from '../common/timestamps.js';
import { ApiError } from '../common/api-error.js';
import { parseListQuery } from '../common/list/list-query.parser.js';
import { runList } from '../common/list/list-runner.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { currentActorId } from '../common/request-context.js';
import { ResourceResponse, type ListResponse } from '../common/responses.js';
import { ResourceTable, respondWith } from '../database/resource-table.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import { CacheService } from '../cache/cache.service.js';
import type { GrantPermissionDto, PermissionGrantDto, RevokePermissionDto } from './dto/permission-grant.dto.js';

interface GrantRow extends PermissionGrantDto {
  readonly version: number;
}

// `is_active` depends on the clock, so it is computed on every read (see `withLiveState`).
const ACTIVE = '(g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now()))';
const RESOURCE_COLUMNS = `g.id, g.user_id, g.permission_id, p.code AS permission_code, g.reason, g.expires_at, g.granted_by, g.granted_at,
  g.revoked_by, g.revoked_at, g.revoke_reason, ${ACTIVE} AS is_active`;
const FROM = 'permission_grants g JOIN permissions p ON p.id = g.permission_id';
// A grant changes once, when revoked: that is its version 2.
const GRANT_COLUMNS = `CASE WHEN g.revoked_at IS NULL THEN 1 ELSE 2 END AS version, ${RESOURCE_COLUMNS}`;

const GRANT_LIST: ListSpec = {
  from: FROM,
  select: RESOURCE_COLUMNS,
  idColumn: 'g.id',
  sort: { id: 'g.id', granted_at: 'g.granted_at' },
  defaultSort: 'id:asc',
  filters: {
    user_id: { column: 'g.user_id', type: 'int' },
    permission_id: { column: 'g.permission_id', type: 'int' },
    is_active: { column: ACTIVE, type: 'bool' },
  },
  search: [],
};

/** Judges `is_active` now: a cached grant past its `expires_at` stops being active at once. */
function withLiveState(json: string): PermissionGrantDto {
  const grant = JSON.parse(json) as PermissionGrantDto;
  const expired = grant.expires_at !== null && Date.parse(grant.expires_at) <= Date.now();
  return { ...grant, is_active: grant.revoked_at === null && !expired };
}

/** Permission grants (part 6.5): append-only rows; granting again makes a new row. */
@Injectable()
export class PermissionGrantsService {
  private readonly grants: ResourceTable<GrantRow>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly authContexts: AuthContextService,
    private readonly authorization: AuthorizationService,
    cache: CacheService,
  ) {
    this.grants = new ResourceTable<GrantRow>(
      {
        table: 'permission_grants',
        from: FROM,
        idColumn: 'g.id',
        columns: GRANT_COLUMNS,
        type: 'permission_grant',
        notFound: 'PERMISSION_GRANT_NOT_FOUND',
      },
      uow,
      cache,
    );
  }

  list(query: Record<string, unknown>): Promise<ListResponse<PermissionGrantDto>> {
    return runList<PermissionGrantDto>(this.uow.reader, GRANT_LIST, parseListQuery(GRANT_LIST, query));
  }

  async get(id: number): Promise<ResourceResponse<PermissionGrantDto>> {
    const read = await this.grants.read(id);
    if (read === undefined) throw ApiError.notFound('PERMISSION_GRANT_NOT_FOUND', id);
    return new ResourceResponse(withLiveState(read.entry.json), { cache: read.cache, version: read.entry.version });
  }

  async grant(actor: AuthContext, dto: GrantPermissionDto): Promise<ResourceResponse<PermissionGrantDto>> {
    const expiresAt = dto.expires_at === undefined ? null : futureTimestamp(dto.expires_at, 'expires_at');
    assertNotSelf(actor, dto.user_id, 'grant');
    const row = await this.uow.run(async (tx) => {
      const code = await this.assertTarget(tx, actor, dto.user_id, dto.permission_id);
      await this.authorization.assertMayDelegate(actor, code);
      await this.lockPair(tx, dto.user_id, dto.permission_id);
      const active = await this.activeGrant(tx, dto.user_id, dto.permission_id);
      if (active !== undefined) {
        throw new ApiError(
          'PERMISSION_ALREADY_GRANTED',
          `User ${dto.user_id} already holds an active grant of permission ${dto.permission_id}`,
          { grant_id: active.id, user_id: dto.user_id, permission_id: dto.permission_id },
        );
      }
      const [inserted] = await tx.db.query<{ id: number }[]>(
        'INSERT INTO permission_grants (user_id, permission_id, reason, expires_at, granted_by) VALUES ($1, $2, $3, $4, $5) RETURNING id',
        [dto.user_id, dto.permission_id, dto.reason ?? null, expiresAt, currentActorId()],
      );
      const created = await this.grants.find(tx.db, inserted?.id ?? 0);
      if (created === undefined) throw new Error('grant insert returned no row');
      await this.audit.record(tx.db, {
        action: 'permission_grant.grant',
        resource_type: 'permission_grant',
        resource_id: created.id,
        reason: dto.reason ?? null,
        changes: {
          user_id: [null, created.user_id],
          permission_code: [null, created.permission_code],
          expires_at: [null, expiresAt?.toISOString() ?? null],
        },
      });
      await this.changed(tx, created);
      return created;
    });
    return respondWith(row, { status: 201, location: `/v1/admin/permission-grants/${row.id}` });
  }

  /** Stamps the revocation of the active grant of the pair; none active is 404. */
  async revoke(actor: AuthContext, dto: RevokePermissionDto): Promise<ResourceResponse<PermissionGrantDto>> {
    const row = await this.uow.run(async (tx) => {
      await this.assertTarget(tx, actor, dto.user_id, dto.permission_id);
      await this.lockPair(tx, dto.user_id, dto.permission_id);
      const active = await this.activeGrant(tx, dto.user_id, dto.permission_id);
      if (active === undefined) {
        throw new ApiError(
          'PERMISSION_GRANT_NOT_FOUND',
          `User ${dto.user_id} holds no active grant of permission ${dto.permission_id}`,
          {
            user_id: dto.user_id,
            permission_id: dto.permission_id,
          },
        );
      }
      await tx.db.query(
        'UPDATE permission_grants SET revoked_at = now(), revoked_by = $2, revoke_reason = $3 WHERE id = $1',
        [active.id, currentActorId(), dto.reason ?? null],
      );
      const revoked = await this.grants.find(tx.db, active.id);
      if (revoked === undefined) throw new Error('revoked grant vanished');
      await this.audit.record(tx.db, {
        action: 'permission_grant.revoke',
        resource_type: 'permission_grant',
        resource_id: active.id,
        reason: dto.reason ?? null,
        changes: { revoked_at: [null, revoked.revoked_at] },
      });
      await this.changed(tx, revoked);
      return revoked;
    });
    return respondWith(row);
  }

  /**
   * 404s for the user and permission, then role rank: a grant or revoke for a user is a write on
   * that user (part 5). Returns the permission's code.
   */
  private async assertTarget(tx: Tx, actor: AuthContext, userId: number, permissionId: number): Promise<string> {
    const [found] = await tx.db.query<{ role_id: number | null; code: string | null }[]>(
      'SELECT (SELECT role_id FROM users WHERE id = $1 AND NOT is_deleted) AS role_id, (SELECT code FROM permissions WHERE id = $2) AS code',
      [userId, permissionId],
    );
    if (found?.role_id == null) throw ApiError.notFound('USER_NOT_FOUND', userId);
    if (found.code === null) throw ApiError.notFound('PERMISSION_NOT_FOUND', permissionId);
    assertMayWriteUser(actor, { id: userId, role_id: found.role_id });
    return found.code;
  }

  /** Grants and revocations of one (user, permission) pair run one at a time. */
  private async lockPair(tx: Tx, userId: number, permissionId: number): Promise<void> {
    await tx.db.query("SELECT pg_advisory_xact_lock(hashtextextended('permission_grant:' || $1 || ':' || $2, 0))", [
      userId,
      permissionId,
    ]);
  }

  private async activeGrant(tx: Tx, userId: number, permissionId: number): Promise<{ id: number } | undefined> {
    const [row] = await tx.db.query<{ id: number }[]>(
      `SELECT g.id FROM permission_grants g WHERE g.user_id = $1 AND g.permission_id = $2 AND ${ACTIVE} ORDER BY g.id DESC LIMIT 1`,
      [userId, permissionId],
    );
    return row;
  }

  /** The grantee's effective permissions changed: bump, then rebuild its auth context after commit. */
  private async changed(tx: Tx, row: GrantRow): Promise<void> {
    await bumpProjectionVersion(tx.db, 'user', row.user_id);
    tx.afterCommit(async () => {
      await Promise.all([this.grants.refresh(row), this.authContexts.refreshUser(row.user_id)]);
    });
  }
}
