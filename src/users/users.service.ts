import { Injectable } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { creationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, diffChanges } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { ApiError } from '../platform/http/api-error.js';
import { isUniqueViolation } from '../platform/http/error-mapping.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { ListResponse, ResourceResponse } from '../platform/http/responses.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
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
    assertMayAssignRole(actor, null, dto.role_id);
    const row = await this.uow
      .run(async (tx) => {
        const stamp = creationStamp(tx);
        const created = await this.users.insert(tx, {
          email: dto.email,
          display_name: dto.display_name,
          phone: dto.phone ?? null,
          user_name: dto.user_name ?? null,
          external_id: dto.external_id ?? null,
          role_id: dto.role_id,
          ...stamp,
        });
        if (created === undefined) throw new Error('user insert returned no row');
        await this.audit.record(tx, 'user.create', created.id, {
          changes: diffChanges(null, created, AUDITED_FIELDS),
        });
        return created;
      })
      .catch((error: unknown) => {
        throw userUniqueProblem(error, dto);
      });
    return respondWith(row, { status: 201, location: `/v1/admin/users/${row.id}` });
  }

  async update(
    actor: AuthContext,
    id: number,
    dto: UpdateUserDto,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<UserDto>> {
    const row = await this.uow
      .run(async (tx) => {
        const before = await this.users.lockLive(tx, id);
        assertMayWriteUser(actor, before);
        if (dto.role_id !== undefined && dto.role_id !== before.role_id) {
          assertNotSelf(actor, id, 'change_role');
          assertMayAssignRole(actor, before.role_id, dto.role_id);
        }
        assertIfMatch(ifMatch, before.version);
        const wanted = { ...before, ...definedFields(dto) };
        const changes = diffChanges(before, wanted, AUDITED_FIELDS);
        // Nothing would change: no write, no new version, no audit event.
        if (Object.keys(changes).length === 0) return before;
        // Only the role decides access among these fields.
        if ('role_id' in changes) await this.access.watch(tx, { users: [id] });
        const after = await this.users.patch(tx, id, {
          email: wanted.email,
          display_name: wanted.display_name,
          phone: wanted.phone,
          user_name: wanted.user_name,
          external_id: wanted.external_id,
          role_id: wanted.role_id,
          ...updateStamp(tx),
        });
        await this.audit.record(tx, 'user.update', id, { changes });
        return after;
      })
      .catch((error: unknown) => {
        throw userUniqueProblem(error, dto);
      });
    return respondWith(row);
  }
}

/** The PATCH body's fields that were sent (`phone: null` counts: it clears the phone). */
function definedFields(
  dto: UpdateUserDto,
): Partial<Pick<UserRow, 'email' | 'display_name' | 'phone' | 'role_id' | 'user_name' | 'external_id'>> {
  return Object.fromEntries(Object.entries(dto).filter(([, value]) => value !== undefined));
}
