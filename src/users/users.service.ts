import { isDeepStrictEqual } from 'node:util';
import { Injectable } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { creationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, diffChanges } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { ApiError } from '../platform/http/api-error.js';
import { isUniqueViolation } from '../platform/http/error-mapping.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { ListResponse, ResourceResponse } from '../platform/http/responses.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { CreateUserDto, UpdateUserDto } from './dto/user-input.dto.js';
import type { UserDto } from './dto/user.dto.js';
import { assertMayAssignRole, assertMayWriteUser, assertNotSelf } from '../access-model/user-rules.js';
import { respondWith } from '../platform/projections/resource-table.js';
import { UsersRepository, type UserRow } from './users.repository.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

/** Fields whose changes audit events record (never the PIN hash). */
export const AUDITED_FIELDS = [
  'email',
  'display_name',
  'phone',
  'user_name',
  'external_id',
  'role_id',
  'status_id',
] as const satisfies readonly (keyof UserRow)[];

/** 409s of the users' unique keys, from the violated index; anything else as it was. */
export function userUniqueProblem(
  error: unknown,
  values: { email?: string; user_name?: string | null; external_id?: string | null },
): unknown {
  if (isUniqueViolation(error, 'users_email_key'))
    return new ApiError(
      'USER_EMAIL_TAKEN',
      `The email ${values.email ?? ''} is already used by another user (deleted users keep theirs)`,
      { email: values.email },
    );
  if (isUniqueViolation(error, 'users_user_name_key'))
    return new ApiError('USER_NAME_TAKEN', `The user name ${values.user_name ?? ''} belongs to another user`, {
      user_name: values.user_name,
    });
  // A user without a user name goes by its email: no two users may present the same name.
  if (isUniqueViolation(error, 'users_presented_name_key')) {
    const name = values.user_name ?? values.email;
    return new ApiError(
      'USER_NAME_TAKEN',
      `The user name ${name ?? ''} belongs to another user (one without a user name goes by its email)`,
      {
        user_name: name,
      },
    );
  }
  if (isUniqueViolation(error, 'users_external_id_key'))
    return new ApiError('EXTERNAL_ID_TAKEN', `Another user has external id ${values.external_id ?? ''}`, {
      external_id: values.external_id,
      resource_type: 'user',
    });
  return error;
}

/** Reads, creation and PATCH of users (part 6.1); lifecycle actions live in `UserActionsService`. */
@Injectable()
export class UsersService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly users: UsersRepository,
    private readonly audit: AuditService,
    private readonly access: AccessWatch,
  ) {}

  list(query: Record<string, unknown>): Promise<ListResponse<UserDto>> {
    return this.users.list(query);
  }

  get(id: number, includeDeleted: boolean, prefetched?: Prefetched): Promise<ResourceResponse<UserDto>> {
    return this.users.detail(id, includeDeleted, prefetched);
  }

  async create(actor: AuthContext, dto: CreateUserDto): Promise<ResourceResponse<UserDto>> {
    const row = await this.uow
      .run((tx) => this.createIn(tx, actor, dto))
      .catch((error: unknown) => {
        throw userUniqueProblem(error, dto);
      });
    return respondWith(row, { status: 201, location: `/v1/admin/users/${row.id}` });
  }

  /** A new user (pending), with its audit event, in the caller's transaction (SCIM's writes, part 6.19). */
  async createIn(tx: Tx, actor: AuthContext, dto: NewUser): Promise<UserRow> {
    assertMayAssignRole(actor, null, dto.role_id);
    const created = await this.users.insert(tx, {
      email: dto.email,
      display_name: dto.display_name,
      phone: dto.phone ?? null,
      user_name: dto.user_name ?? null,
      external_id: dto.external_id ?? null,
      ...(dto.scim_profile === undefined ? {} : { scim_profile: dto.scim_profile }),
      role_id: dto.role_id,
      ...creationStamp(tx),
    });
    if (created === undefined) throw new Error('user insert returned no row');
    await this.audit.record(tx, 'user.create', created.id, {
      changes: diffChanges(null, created, AUDITED_FIELDS),
    });
    return created;
  }

  async update(
    actor: AuthContext,
    id: number,
    dto: UpdateUserDto,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<UserDto>> {
    const row = await this.uow
      .run(async (tx) => this.updateIn(tx, actor, await this.users.lockLive(tx, id), dto, ifMatch))
      .catch((error: unknown) => {
        throw userUniqueProblem(error, dto);
      });
    return respondWith(row);
  }

  /**
   * A PATCH of the locked live user `before`, in the caller's transaction; `before` itself when
   * nothing would change (no write, no new version, no audit event).
   */
  async updateIn(tx: Tx, actor: AuthContext, before: UserRow, dto: UserChange, ifMatch: IfMatch): Promise<UserRow> {
    const id = before.id;
    assertMayWriteUser(actor, before);
    if (dto.role_id !== undefined && dto.role_id !== before.role_id) {
      assertNotSelf(actor, id, 'change_role');
      assertMayAssignRole(actor, before.role_id, dto.role_id);
    }
    assertIfMatch(ifMatch, before.version);
    const { scim_profile: profile, ...fields } = dto;
    const wanted = { ...before, ...definedFields(fields) };
    const changes = diffChanges(before, wanted, AUDITED_FIELDS);
    const current = profile === undefined ? undefined : await this.users.scimProfileOf(tx, id);
    const profileChanged = profile !== undefined && !isDeepStrictEqual(current ?? null, profile);
    if (Object.keys(changes).length === 0 && !profileChanged) return before;
    // Only the role decides access among these fields.
    if ('role_id' in changes) await this.access.watch(tx, { users: [id] });
    const after = await this.users.patch(tx, id, {
      email: wanted.email,
      display_name: wanted.display_name,
      phone: wanted.phone,
      user_name: wanted.user_name,
      external_id: wanted.external_id,
      role_id: wanted.role_id,
      ...(profileChanged ? { scim_profile: profile } : {}),
      ...updateStamp(tx),
    });
    await this.audit.record(tx, 'user.update', id, {
      before,
      changes: profileChanged ? { ...changes, scim_profile: [current ?? null, profile] } : changes,
    });
    return after;
  }
}

/** What a new user is made of: the admin API's body, and what SCIM keeps beside it. */
export type NewUser = CreateUserDto & { readonly scim_profile?: Readonly<Record<string, unknown>> | null };
/** A change of a user: the admin API's PATCH, and what SCIM keeps beside it. */
export type UserChange = UpdateUserDto & { readonly scim_profile?: Readonly<Record<string, unknown>> | null };

/** The PATCH body's fields that were sent (`phone: null` counts: it clears the phone). */
function definedFields(
  dto: UpdateUserDto,
): Partial<Pick<UserRow, 'email' | 'display_name' | 'phone' | 'role_id' | 'user_name' | 'external_id'>> {
  return Object.fromEntries(Object.entries(dto).filter(([, value]) => value !== undefined));
}
