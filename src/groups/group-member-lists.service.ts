import { Injectable } from '@nestjs/common';
import { GroupFactsRepository } from '../access-model/group-facts.repository.js';
import { directionOf, pageOf } from '../access/dto/access.dto.js';
import { ApiError } from '../platform/http/api-error.js';
import type { ListResponse } from '../platform/http/responses.js';
import { ListPages, type ComputedPage } from '../platform/projections/list-pages.js';
import { Projections } from '../platform/projections/projections.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { UserReferences } from '../users/user-references.repository.js';
import type {
  MembersQueryDto,
  MembershipDto,
  ReachedMemberDto,
  UserGroupDto,
  UserGroupsQueryDto,
} from './dto/group.dto.js';
import { GroupMembershipsRepository } from './group-memberships.repository.js';
import { GroupsRepository } from './groups.repository.js';

/** What a transitive answer is read from: a write to any of them makes its cached pages unusable. */
const GROUP_TABLES = ['group_memberships', 'groups', 'users'];

/** The earliest expiry among the rows (ISO), as epoch ms: the page changes by itself then. */
function earliest(expiries: readonly (string | null)[]): number | undefined {
  const times = expiries.flatMap((at) => (at === null ? [] : [Date.parse(at)]));
  return times.length === 0 ? undefined : Math.min(...times);
}

/** One page of rows computed whole (a group's reach, a user's groups), good until the first expiry among them. */
function pageFrom<Row extends { readonly expires_at: string | null }>(
  all: readonly Row[],
  page: { readonly page: number; readonly page_size: number },
  direction: 'asc' | 'desc',
): ComputedPage<Row> {
  const ordered = direction === 'asc' ? all : [...all].reverse();
  const start = (page.page - 1) * page.page_size;
  return {
    items: ordered.slice(start, start + page.page_size),
    total: all.length,
    total_exact: true,
    changesAt: earliest(all.map((row) => row.expires_at)),
  };
}

/** 400 for a parameter that only the direct list takes, asked with `transitive=true`. */
function notTransitive(field: string, message: string): ApiError {
  return ApiError.validation([{ field, rule: 'transitive', message }]);
}

/** The member lists of part 6.18: a group's direct memberships or every user it reaches, and a user's groups. */
@Injectable()
export class GroupMemberListsService {
  private readonly pages: ListPages;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly groups: GroupsRepository,
    private readonly memberships: GroupMembershipsRepository,
    private readonly users: UserReferences,
    private readonly facts: GroupFactsRepository,
    projections: Projections,
  ) {
    this.pages = new ListPages(projections);
  }

  async members(
    groupId: number,
    query: MembersQueryDto,
  ): Promise<ListResponse<MembershipDto> | ListResponse<ReachedMemberDto>> {
    await this.groups.liveGroup(this.uow.reader, groupId);
    const { transitive, ...direct } = query;
    if (transitive !== 'true') return this.memberships.list(groupId, direct);
    for (const field of ['member_type', 'is_active'] as const)
      if (query[field] !== undefined)
        throw notTransitive(field, `${field} filters direct memberships; it is not taken with transitive=true`);
    if (query.sort !== undefined && !/^user_id:(asc|desc)$/.test(query.sort))
      throw notTransitive('sort', 'with transitive=true, sort is user_id:asc or user_id:desc');
    const page = pageOf(query);
    const direction = directionOf(query.sort, 'asc');
    return this.pages.readComputed({ route: 'group-members', groupId, direction, ...page }, GROUP_TABLES, async () =>
      pageFrom(await this.facts.members(this.uow.reader, groupId), page, direction),
    );
  }

  async groupsOf(userId: number, query: UserGroupsQueryDto): Promise<ListResponse<UserGroupDto>> {
    const user = await this.users.user(this.uow.reader, userId);
    if (user === undefined || user.is_deleted) throw ApiError.notFound('USER_NOT_FOUND', userId);
    const page = pageOf(query);
    const direction = directionOf(query.sort, 'asc');
    return this.pages.readComputed({ route: 'user-groups', userId, direction, ...page }, GROUP_TABLES, async () =>
      pageFrom(
        (await this.facts.groupsOf(this.uow.reader, userId)).map((group) => ({
          group_id: group.group_id,
          via: [...group.via],
          expires_at: group.expires_at,
        })),
        page,
        direction,
      ),
    );
  }
}
