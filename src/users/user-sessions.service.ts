import { Injectable } from '@nestjs/common';
import { ApiError } from '../platform/http/api-error.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { SESSION_LIST } from '../access-model/sessions.repository.js';
import { SessionsService } from '../access-model/sessions.service.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { parseListQuery } from '../platform/http/list/list-query.parser.js';
import { ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { ListPages } from '../platform/projections/list-pages.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import type { SessionDto, SessionsRevokedDto } from './dto/session.dto.js';
import { assertMayWriteUser, assertNotSelf } from '../access-model/user-rules.js';
import { UsersRepository } from './users.repository.js';

/** A user's sign-in sessions: the list, and revoking them all (part 6.1). */
@Injectable()
export class UserSessionsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly users: UsersRepository,
    private readonly sessions: SessionsService,
    private readonly pages: ListPages,
  ) {}

  /** Newest first. A deleted user's sessions stay readable (an auditor's question); an unknown user is 404. */
  async list(userId: number, query: Record<string, unknown>): Promise<ListResponse<SessionDto>> {
    parseListQuery(SESSION_LIST, query); // a bad query is a 400 before the user's 404
    if ((await this.users.read(userId)) === undefined) throw ApiError.notFound('USER_NOT_FOUND', userId);
    return this.pages.read<SessionDto>(SESSION_LIST, query, { where: 'user_id = $1', params: [userId] });
  }

  /**
   * Revokes every live session, one `session.revoke` audit event each (the sessions service
   * rebuilds their cache entries after commit, so every instance refuses them on the next request).
   * `If-Match` is checked against the user's version (the sessions have none of their own here).
   */
  revokeAll(
    actor: AuthContext,
    userId: number,
    reason: string | undefined,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<SessionsRevokedDto>> {
    return this.uow.run(async (tx) => {
      const user = await this.users.lockLive(tx, userId);
      assertNotSelf(actor, userId, 'revoke_sessions');
      assertMayWriteUser(actor, user);
      assertIfMatch(ifMatch, user.version);
      const revoked = await this.sessions.revokeAllOf(tx, userId, reason ?? 'sessions revoked');
      return new ResourceResponse({ user_id: userId, revoked: revoked.length });
    });
  }
}
