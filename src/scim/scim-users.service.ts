import { Inject, Injectable } from '@nestjs/common';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { ApiError } from '../platform/http/api-error.js';
import type { IfMatch } from '../platform/http/etag.js';
import { UserActionsService } from '../users/user-actions.service.js';
import { UsersRepository } from '../users/users.repository.js';
import { userUniqueProblem, UsersService } from '../users/users.service.js';
import { applyOperation, bodyDoc } from './scim-patch.js';
import { parsePatchBody } from './scim-patch-body.js';
import { listResponse, project, type ListQuery, type Selection } from './scim-query.js';
import { editableUser, scimUser, USER_DOC, userInput, type ScimUserInput } from './scim-user-mapping.js';
import { ScimUsersRepository, type ScimUserRow } from './scim-users.repository.js';
import type { Doc } from './scim-patch.js';

/** A SCIM resource answered: the document, its version (the ETag) and whether it was made. */
export interface ScimAnswer {
  readonly resource: Doc;
  readonly version: number;
  readonly created?: boolean;
  /** A PATCH that changed nothing. */
  readonly unchanged?: boolean;
}

/** The id in a SCIM path: ours are numbers, so anything else names no resource (404, as Okta's test expects). */
export function scimId(text: string, notFound: 'USER_NOT_FOUND' | 'GROUP_NOT_FOUND'): number {
  const id = /^[1-9]\d{0,15}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(id)) throw ApiError.notFound(notFound, text);
  return id;
}

/**
 * SCIM's Users (part 6.19) over the admin API's users: each write is the admin API's own
 * (`UsersService.createIn`, `updateIn`, `UserActionsService.setActiveIn`, `remove`), judged by the
 * same rules for the token's user and in one transaction with its audit events.
 */
@Injectable()
export class ScimUsersService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly reads: ScimUsersRepository,
    private readonly users: UsersRepository,
    private readonly writes: UsersService,
    private readonly actions: UserActionsService,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  async list(query: ListQuery): Promise<Doc> {
    const withGroups = project({ groups: [] }, query.selection).groups !== undefined;
    const { total, rows } = await this.reads.page(query.filter, query.startIndex - 1, query.count, withGroups);
    return listResponse(
      total,
      query.startIndex,
      rows.map((row) => project(scimUser(row), query.selection)),
    );
  }

  async get(id: number, selection: Selection): Promise<ScimAnswer> {
    const row = await this.reads.read(id);
    if (row === undefined) throw ApiError.notFound('USER_NOT_FOUND', id);
    return { resource: project(scimUser(row), selection), version: row.version };
  }

  /** POST: a new user with the default role (roles come from groups); `active` true (the default) activates it. */
  async create(actor: AuthContext, body: unknown): Promise<ScimAnswer> {
    const input = userInput(bodyDoc(USER_DOC, body));
    const row = await this.write(input, async (tx) => {
      const { phone, external_id: externalId, ...rest } = fields(input);
      const created = await this.writes.createIn(tx, actor, {
        ...rest,
        ...(phone === null ? {} : { phone }),
        ...(externalId === null ? {} : { external_id: externalId }),
        role_id: this.settings.scimDefaultRoleId,
      });
      const user = input.active === false ? created : await this.actions.setActiveIn(tx, actor, created, true, true);
      // A new user belongs to no group yet: its SCIM view is the row written, with no read back.
      return { ...user, id: String(user.id), scim_profile: input.scim_profile, groups: [] };
    });
    return { resource: scimUser(row), version: row.version, created: true };
  }

  /** PUT: the document replaces the user's SCIM attributes. */
  async replace(actor: AuthContext, id: number, body: unknown, ifMatch: IfMatch): Promise<ScimAnswer> {
    const doc = bodyDoc(USER_DOC, body, String(id));
    return this.change(actor, id, ifMatch, () => doc);
  }

  /** PATCH: the operations applied to the user's document, then written as a PUT of the result would be. */
  async patch(actor: AuthContext, id: number, body: unknown, ifMatch: IfMatch): Promise<ScimAnswer> {
    const operations = parsePatchBody(body);
    return this.change(actor, id, ifMatch, (current) => {
      const doc = editableUser(current);
      for (const operation of operations) applyOperation(doc, USER_DOC, operation);
      return doc;
    });
  }

  /** DELETE: as `DELETE /v1/admin/users/{id}` (sessions revoked); 404 when there is no live user. */
  async remove(actor: AuthContext, id: number, ifMatch: IfMatch): Promise<void> {
    if ((await this.reads.read(id)) === undefined) throw ApiError.notFound('USER_NOT_FOUND', id);
    await this.actions.remove(actor, id, ifMatch);
  }

  private async change(
    actor: AuthContext,
    id: number,
    ifMatch: IfMatch,
    documentOf: (current: ScimUserRow) => Doc,
  ): Promise<ScimAnswer> {
    let input: ScimUserInput | undefined;
    let unchanged = false;
    const row = await this.write(
      () => input,
      async (tx) => {
        const before = await this.users.lockLive(tx, id);
        const current = await this.reads.live(tx.db, id);
        if (current === undefined) throw ApiError.notFound('USER_NOT_FOUND', id);
        input = userInput(documentOf(current), current.email);
        const updated = await this.writes.updateIn(tx, actor, before, fields(input), ifMatch);
        const after =
          input.active === undefined ? updated : await this.actions.setActiveIn(tx, actor, updated, input.active);
        unchanged = after === before;
        return this.written(tx, id);
      },
    );
    return { resource: scimUser(row), version: row.version, ...(unchanged ? { unchanged } : {}) };
  }

  /** Runs the write; a unique key taken is 409 uniqueness (named by the input's value). */
  private write(
    input: ScimUserInput | (() => ScimUserInput | undefined),
    work: (tx: Tx) => Promise<ScimUserRow>,
  ): Promise<ScimUserRow> {
    return this.uow.run(work).catch((error: unknown) => {
      const given = typeof input === 'function' ? input() : input;
      throw given === undefined ? error : userUniqueProblem(error, given);
    });
  }

  /** The user as the write leaves it, read in its transaction (a replica may not have it yet). */
  private async written(tx: Tx, id: number): Promise<ScimUserRow> {
    const row = await this.reads.live(tx.db, id);
    if (row === undefined) throw new Error(`user ${id} vanished inside its own write`);
    return row;
  }
}

/** The admin API's fields of a SCIM user input. */
function fields(input: ScimUserInput): {
  email: string;
  display_name: string;
  phone: string | null;
  user_name: string;
  external_id: string | null;
  scim_profile: Readonly<Record<string, unknown>> | null;
} {
  return {
    email: input.email,
    display_name: input.display_name,
    phone: input.phone,
    user_name: input.user_name,
    external_id: input.external_id,
    scim_profile: input.scim_profile,
  };
}
