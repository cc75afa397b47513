import { Injectable } from '@nestjs/common';
import { roleById } from '../platform/auth/roles.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import type { ListResponse } from '../platform/http/responses.js';
import { ListPages } from '../platform/projections/list-pages.js';
import type { PermissionDto, RoleDto } from './catalogue.dto.js';

export const PERMISSION_LIST = listSpec({
  from: 'permissions',
  select: 'id, code, device_scoped',
  sort: ['id', 'code'],
  search: ['code'],
});

export const ROLE_LIST = listSpec({ from: 'roles', select: 'id, code, admin_access', sort: ['id', 'code'] });

/** Reads of the seeded catalogue; each role's permissions come from `src/auth/roles.ts`. */
@Injectable()
export class CatalogueService {
  constructor(private readonly pages: ListPages) {}

  permissions(query: Record<string, unknown>): Promise<ListResponse<PermissionDto>> {
    return this.pages.read<PermissionDto>(PERMISSION_LIST, query);
  }

  roles(query: Record<string, unknown>): Promise<ListResponse<RoleDto>> {
    return this.pages.read<Omit<RoleDto, 'permissions'>, RoleDto>(ROLE_LIST, query, undefined, (rows) =>
      rows.map((role) => ({ ...role, permissions: [...(roleById(role.id)?.permissions ?? [])] })),
    );
  }
}
