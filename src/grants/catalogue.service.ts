import { Injectable } from '@nestjs/common';
import { roleById } from '../auth/roles.js';
import { parseListQuery } from '../common/list/list-query.parser.js';
import { runList } from '../common/list/list-runner.js';
import { listSpec } from '../common/list/list-spec.js';
import { ListResponse } from '../common/responses.js';
import { UnitOfWork } from '../database/unit-of-work.js';
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
  constructor(private readonly uow: UnitOfWork) {}

  permissions(query: Record<string, unknown>): Promise<ListResponse<PermissionDto>> {
    return runList<PermissionDto>(this.uow.reader, PERMISSION_LIST, parseListQuery(PERMISSION_LIST, query));
  }

  async roles(query: Record<string, unknown>): Promise<ListResponse<RoleDto>> {
    const page = await runList<Omit<RoleDto, 'permissions'>>(
      this.uow.reader,
      ROLE_LIST,
      parseListQuery(ROLE_LIST, query),
    );
    const items = page.items.map((role) => ({ ...role, permissions: [...(roleById(role.id)?.permissions ?? [])] }));
    return new ListResponse(items, page.page, page.page_size, page.total, page.total_exact);
  }
}
