import { Injectable } from '@nestjs/common';
import type { ListResponse } from '../platform/http/responses.js';
import { ListPages } from '../platform/projections/list-pages.js';
import { AuthorityReferences } from '../authorities/authority-references.repository.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { AccessHistoryRepository } from './access-history.repository.js';
import { replay } from './access-timeline-replay.js';
import { permissionOf } from './access.service.js';
import type { AccessTimelineEntryDto, AccessTimelineQueryDto } from './dto/access-timeline.dto.js';
import { directionOf, pageOf } from './dto/access.dto.js';

const ACCESS_TABLES = ['users', 'authorities', 'authority_permissions', 'groups', 'group_memberships'] as const;

/**
 * `GET /devices/{id}/access-timeline` (part 6.13): every moment a user gained or lost a
 * device-scoped right on the device through the device's own layer (an authority that is the owner
 * or holds the permission, the user's own or a group's it then belonged to, of a user then allowed
 * anything at all), with its cause, actor and event, and the group it came through. The device's history is replayed instant by instant through the rules of part 5, and
 * consecutive answers are compared; expiries are instants of their own.
 */
@Injectable()
export class AccessTimelineService {
  constructor(
    private readonly history: AccessHistoryRepository,
    private readonly pages: ListPages,
    private readonly authorityReferences: AuthorityReferences,
    private readonly uow: UnitOfWork,
  ) {}

  async timeline(deviceId: number, query: AccessTimelineQueryDto): Promise<ListResponse<AccessTimelineEntryDto>> {
    await this.authorityReferences.device(this.uow.reader, deviceId);
    if (query.permission !== undefined) permissionOf(query.permission, true);
    const page = pageOf(query);
    const filter = {
      user_id: query.user_id === undefined ? undefined : Number(query.user_id),
      permission: query.permission,
    };
    const identity = { route: 'access-timeline', deviceId, ...filter, ...page, sort: query.sort ?? null };
    return this.pages.readComputed(identity, ACCESS_TABLES, async (caching) => {
      const changesAt = caching ? await this.history.nextExpiry() : undefined;
      const [now, start, history] = await Promise.all([
        this.history.now(),
        this.history.historyStart(),
        this.history.deviceHistory(deviceId),
      ]);
      const entries = replay(history, now.getTime() * 1000, start.getTime() * 1000).filter(
        (entry) =>
          (filter.user_id === undefined || entry.user_id === filter.user_id) &&
          (filter.permission === undefined || entry.permission_code === filter.permission),
      );
      if (directionOf(query.sort, 'desc') === 'desc') entries.reverse();
      const offset = (page.page - 1) * page.page_size;
      return {
        items: entries.slice(offset, offset + page.page_size),
        total: entries.length,
        total_exact: true,
        changesAt,
        meta: { at: now.toISOString() },
      };
    });
  }
}
