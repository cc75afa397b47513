import { Inject, Injectable } from '@nestjs/common';
import { AuthorityReferences } from '../authorities/authority-references.repository.js';
import { PermissionReferences } from '../grants/permission-references.repository.js';
import { MessagesService } from '../inbox/messages.service.js';
import { creationStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, diffChanges } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { ApiError } from '../platform/http/api-error.js';
import { isUniqueViolation } from '../platform/http/error-mapping.js';
import { ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import type { Prefetched } from '../platform/projections/prefetched.js';
import { respondWith } from '../platform/projections/resource-table.js';
import { UserReferences } from '../users/user-references.repository.js';
import { askedNotice, outcomeNotice } from './access-request-notices.js';
import { accessRequestInvalid, AccessRequestRules } from './access-request-rules.service.js';
import { AccessRequestsRepository, type AccessRequestRow } from './access-requests.repository.js';
import type { AccessRequestDto, CreateAccessRequestDto } from './dto/access-request.dto.js';

const AUDITED_FIELDS = [
  'requester_id',
  'device_id',
  'authority_id',
  'permission_code',
  'reason',
  'duration_seconds',
  'state',
  'expires_at',
  'approvers',
] as const satisfies readonly (keyof AccessRequestRow)[];

/** A duration longer than allowed: a bad body value (400), like any other out-of-range field. */
export function durationTooLong(max: number, what: string): ApiError {
  return ApiError.field('duration_seconds', 'max', `duration_seconds must not be greater than ${max} (${what})`);
}

/** Reads and creation of access requests (part 6.15); decisions live in `AccessRequestDecisions`. */
@Injectable()
export class AccessRequestsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly rows: AccessRequestsRepository,
    private readonly rules: AccessRequestRules,
    private readonly audit: AuditService,
    private readonly messages: MessagesService,
    private readonly authorityReferences: AuthorityReferences,
    private readonly permissionReferences: PermissionReferences,
    private readonly userReferences: UserReferences,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  async list(actor: AuthContext, query: Record<string, unknown>): Promise<ListResponse<AccessRequestDto>> {
    return this.rows.list(query, await this.rules.listScope(actor));
  }

  /** The cached detail; 404 for one the actor may not see. A lapsed pending request reads `expired`. */
  async get(actor: AuthContext, id: number, prefetched?: Prefetched): Promise<ResourceResponse<AccessRequestDto>> {
    const read = await this.rows.read(id, prefetched);
    if (read === undefined || !(await this.rules.maySee(actor, read.value)))
      throw ApiError.notFound('ACCESS_REQUEST_NOT_FOUND', id);
    // The entry may have been stored before the expiry passed; the state is judged now.
    const lapsed = read.value.state === 'pending' && new Date(read.value.expires_at).getTime() <= Date.now();
    const value: AccessRequestDto = lapsed ? { ...read.value, state: 'expired' } : read.value;
    return new ResourceResponse(value, { cache: read.cache, version: read.entry.version });
  }

  async create(actor: AuthContext, dto: CreateAccessRequestDto): Promise<ResourceResponse<AccessRequestDto>> {
    await this.authorityReferences.device(this.uow.reader, dto.device_id);
    const permission = await this.permissionReferences.permission(this.uow.reader, dto.permission_id);
    const asked = { requester_id: actor.user_id, device_id: dto.device_id, permission_code: permission.code };
    if (!permission.device_scoped)
      throw accessRequestInvalid('not_device_scoped', {
        permission_id: permission.id,
        permission_code: permission.code,
      });
    if (dto.duration_seconds > this.settings.accessRequestMaxSeconds)
      throw durationTooLong(this.settings.accessRequestMaxSeconds, 'ACCESS_REQUEST_MAX_SECONDS');
    // Judged before the transaction (cached projections); a change meanwhile only alters who was told.
    const approvers = await this.rules.approvers(asked);
    const row = await this.uow
      .run(async (tx) => {
        const authority = await this.authorityReferences.lockedFacts(tx.db, dto.device_id, actor.user_id);
        const user = await this.userReferences.user(tx.db, actor.user_id);
        await this.rules.assertGrantable(asked, user, authority);
        if (authority === undefined) throw accessRequestInvalid('no_authority', { device_id: dto.device_id });
        // A pending request of the same ask whose expiry passed still holds the one-pending place.
        await this.recordExpired(tx, await this.rows.expireDue(tx, 1, { ...asked, permission_id: permission.id }));
        const created = await this.rows.insert(tx, {
          requester_id: actor.user_id,
          device_id: dto.device_id,
          authority_id: authority.id,
          permission_id: permission.id,
          permission_code: permission.code,
          reason: dto.reason,
          duration_seconds: dto.duration_seconds,
          expires_at: new Date(Date.now() + this.settings.accessRequestPendingHours * 3_600_000),
          approvers: approvers.notified,
          ...creationStamp(tx),
        });
        if (created === undefined) throw new Error('access request insert returned no row');
        await this.audit.record(tx, 'access_request.created', created.id, {
          reason: dto.reason,
          changes: diffChanges(null, created, AUDITED_FIELDS),
        });
        for (const userId of approvers.notified) await this.messages.notify(tx, askedNotice(userId, created));
        return created;
      })
      .catch((error: unknown) => {
        if (!isUniqueViolation(error, 'access_requests_one_pending_key')) throw error;
        throw new ApiError(
          'INVALID_STATE_TRANSITION',
          `A pending request for ${permission.code} on device ${dto.device_id} already exists; cancel it or wait for its decision`,
          { from: 'pending', action: 'create', device_id: dto.device_id, permission_id: permission.id },
        );
      });
    return respondWith(row, { status: 201, location: `/v1/admin/access-requests/${row.id}` });
  }

  /**
   * The expiry job's batch (and a new ask's own lapsed predecessor): records `expired` on pending
   * requests past their expiry, each with its event and the requester's message. Answers how many.
   */
  async expireDue(limit: number): Promise<number> {
    return this.uow.run(async (tx) => this.recordExpired(tx, await this.rows.expireDue(tx, limit)));
  }

  private async recordExpired(tx: Tx, rows: readonly AccessRequestRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    await this.audit.recordMany(
      tx,
      rows.map((row) => ({
        action: 'access_request.expired',
        resource_id: row.id,
        changes: { state: ['pending', 'expired'] },
      })),
    );
    for (const row of rows) await this.messages.notify(tx, outcomeNotice(row));
    return rows.length;
  }
}
