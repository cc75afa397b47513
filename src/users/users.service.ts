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
  'role_id',
  'status_id',
] as const satisfies readonly (keyof UserRow)[];

function emailTaken(email: string): ApiError {
  return new ApiError(
    'USER_EMAIL_TAKEN',
    `The email ${email} is already used by another user (deleted users keep theirs)`,
    { email },
  );
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
        throw isUniqueViolation(error, 'users_email_key') ? emailTaken(dto.email) : error;
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
          role_id: wanted.role_id,
          ...updateStamp(tx),
        });
        await this.audit.record(tx, 'user.update', id, { changes });
        return after;
      })
      .catch((error: unknown) => {
        throw isUniqueViolation(error, 'users_email_key') && dto.email !== undefined ? emailTaken(dto.email) : error;
      });
    return respondWith(row);
  }
}

/** The PATCH body's fields that were sent (`phone: null` counts: it clears the phone). */
function definedFields(dto: UpdateUserDto): Partial<Pick<UserRow, 'email' | 'display_name' | 'phone' | 'role_id'>> {
  return Object.fromEntries(Object.entries(dto).filter(([, value]) => value !== undefined));
}
