import { Injectable } from '@nestjs/common';
import { NOT_REVOKED, AuditService } from '../platform/audit/audit.service.js';
import { AuthContextService } from './auth-context.service.js';
import type { Tx } from '../platform/database/unit-of-work.js';
import { revokeSessionsOfUser, sessionOnFeed, type SessionRow } from './sessions.repository.js';

/** Session writes made on behalf of other writes (suspending or deleting a user). */
@Injectable()
export class SessionsService {
  constructor(
    private readonly audit: AuditService,
    private readonly authContexts: AuthContextService,
  ) {}

  /**
   * Revokes every live session of the user inside the caller's transaction, with one
   * `session.revoke` audit event each; their cache entries are rebuilt after commit.
   */
  async revokeAllOf(tx: Tx, userId: number, reason: string): Promise<SessionRow[]> {
    const revoked = await revokeSessionsOfUser(tx, userId, reason, tx.actor);
    for (const session of revoked) tx.noteResource('session', sessionOnFeed(session));
    await this.audit.recordMany(
      tx,
      revoked.map((session) => ({
        action: 'session.revoke',
        resource_id: session.id,
        before: NOT_REVOKED,
        reason,
        changes: { revoked_at: [null, session.revoked_at?.toISOString() ?? null] },
      })),
    );
    // The session entries of the auth context are rebuilt after commit: refused on every instance.
    tx.afterCommit(() => this.authContexts.refreshSessions(revoked));
    return revoked;
  }
}
