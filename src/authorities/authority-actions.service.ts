import { Injectable } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { deletionStamp, restorationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, type AuditAction } from '../platform/audit/audit.service.js';
import { ApiError } from '../platform/http/api-error.js';
import { assertIfMatch, unchanged, type IfMatch } from '../platform/http/etag.js';
import type { NoContent, ResourceResponse } from '../platform/http/responses.js';
import { NOW, respondWith } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { AuthoritiesRepository, authorityState, ownerProtected, type AuthorityRow } from './authorities.repository.js';
import type { AuthorityDto } from './dto/authority.dto.js';
import { capitalised, withArticle, pastParticiple } from '../platform/http/article.js';

type AuthorityAction = 'activate' | 'deactivate' | 'revoke';

/** From which states each action may start (part 6.3); revoked is terminal except through transfer-owner. */
const ALLOWED_FROM: Readonly<Record<AuthorityAction, readonly ReturnType<typeof authorityState>[]>> = {
  activate: ['inactive'],
  deactivate: ['active'],
  revoke: ['active', 'inactive'],
};

/** Soft delete, restore and the lifecycle actions of authorities, each one transaction with its audit event. */
@Injectable()
export class AuthorityActionsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly authorities: AuthoritiesRepository,
    private readonly audit: AuditService,
    private readonly access: AccessWatch,
  ) {}

  remove(id: number, ifMatch: IfMatch): Promise<ResourceResponse<AuthorityDto> | NoContent> {
    return this.uow.run(async (tx) => {
      const before = await this.authorities.lock(tx, id);
      if (before.is_deleted) return unchanged(ifMatch, before.version);
      if (before.owner) throw ownerProtected(before, 'delete');
      assertIfMatch(ifMatch, before.version);
      await this.watch(tx, before);
      const stamp = deletionStamp(tx);
      const after = await this.authorities.patch(tx, id, stamp);
      return this.finish(tx, before, after, 'authority.delete', { is_deleted: [false, true] });
    });
  }

  restore(id: number, ifMatch: IfMatch): Promise<ResourceResponse<AuthorityDto> | NoContent> {
    return this.uow.run(async (tx) => {
      const before = await this.authorities.lock(tx, id);
      if (!before.is_deleted) return unchanged(ifMatch, before.version);
      assertIfMatch(ifMatch, before.version);
      await this.watch(tx, before);
      const after = await this.authorities.patch(tx, id, restorationStamp(tx));
      return this.finish(tx, before, after, 'authority.restore', { is_deleted: [true, false] });
    });
  }

  activate(id: number, ifMatch: IfMatch): Promise<ResourceResponse<AuthorityDto>> {
    return this.uow.run(async (tx) => {
      const before = await this.prepare(tx, id, ifMatch, 'activate');
      await this.watch(tx, before);
      const after = await this.authorities.patch(tx, id, { is_active: true, ...updateStamp(tx) });
      return this.finish(tx, before, after, 'authority.activate', { is_active: [false, true] });
    });
  }

  deactivate(id: number, ifMatch: IfMatch): Promise<ResourceResponse<AuthorityDto>> {
    return this.uow.run(async (tx) => {
      const before = await this.prepare(tx, id, ifMatch, 'deactivate');
      await this.watch(tx, before);
      const after = await this.authorities.patch(tx, id, { is_active: false, ...updateStamp(tx) });
      return this.finish(tx, before, after, 'authority.deactivate', { is_active: [before.is_active, false] });
    });
  }

  revoke(id: number, reason: string | undefined, ifMatch: IfMatch): Promise<ResourceResponse<AuthorityDto>> {
    return this.uow.run(async (tx) => {
      const before = await this.prepare(tx, id, ifMatch, 'revoke');
      await this.watch(tx, before);
      const actor = updateStamp(tx).updated_by;
      const after = await this.authorities.patch(tx, id, {
        is_active: false,
        revoked_at: NOW,
        revoked_by: actor,
        revoke_reason: reason ?? null,
        updated_by: actor,
      });
      const changes: Record<string, readonly [unknown, unknown]> = {
        revoked_at: [null, after.revoked_at],
        ...(before.is_active ? { is_active: [true, false] } : {}),
      };
      return this.finish(tx, before, after, 'authority.revoke', changes, reason ?? null);
    });
  }

  /** What the authority's holder may do on its device, before and after the change (part 6.17). */
  private async watch(tx: Tx, authority: AuthorityRow): Promise<void> {
    const users = await this.authorities.usersHolding(tx, authority);
    await this.access.watch(tx, { users, devices: [authority.device_id] });
  }

  /** 404 (deleted too), owner protection (422), If-Match (412), then the state rule (409). */
  private async prepare(tx: Tx, id: number, ifMatch: IfMatch, action: AuthorityAction): Promise<AuthorityRow> {
    const before = await this.authorities.lockLive(tx, id);
    if (before.owner && action !== 'activate') throw ownerProtected(before, action);
    assertIfMatch(ifMatch, before.version);
    const from = authorityState(before);
    if (!ALLOWED_FROM[action].includes(from)) {
      throw new ApiError(
        'INVALID_STATE_TRANSITION',
        `${capitalised(withArticle(from))} authority cannot be ${pastParticiple(action)}`,
        { from, action },
      );
    }
    return before;
  }

  private async finish(
    tx: Tx,
    before: AuthorityRow,
    after: AuthorityRow,
    action: AuditAction,
    changes: Record<string, readonly [unknown, unknown]>,
    reason: string | null = null,
  ): Promise<ResourceResponse<AuthorityDto>> {
    await this.audit.record(tx, action, after.id, { before, reason, changes });
    return respondWith(after);
  }
}
