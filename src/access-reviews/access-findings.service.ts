import { Inject, Injectable } from '@nestjs/common';
import { directionOf, pageOf } from '../access/dto/access.dto.js';
import { permissionCodeOf } from '../platform/auth/permissions.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { ListResponse } from '../platform/http/responses.js';
import { Projections } from '../platform/projections/projections.js';
import { AccessFindingsRepository, EXACT_UP_TO, type FindingRow } from './access-findings.repository.js';
import type { AccessFindingDto, AccessFindingsQueryDto } from './dto/access-finding.dto.js';

const DAY_MS = 86_400_000;
/** How long a count past the cap is taken as still past it (the total is then an estimate anyway). */
const OVER_CAP_MS = 30_000;
/** Filters remembered as past the cap, at most (a map, not a cache: a burst of odd filters only forgets). */
const OVER_CAP_KEPT = 1000;
/**
 * The tables whose writes can take a path off the findings (a revocation, an authority revoked or
 * deleted, a recorded use): a count past the cap is trusted only while their generations stand.
 */
const FINDINGS_TABLES = [
  'permission_grants',
  'authorities',
  'authority_permissions',
  'access_path_uses',
  'groups',
  'group_memberships',
];

interface OverCap {
  readonly until: number;
  /** The tables' generations (then the flush generation) the count was made under. */
  readonly generations: string;
}

/** `GET /access-findings` (part 6.16): revocable paths unused for a number of days, never cached (time moves them). */
@Injectable()
export class AccessFindingsService {
  /**
   * Filters whose capped count reached the cap lately, until when. Counting 10 001 paths costs
   * more than the page itself; a filter past the cap a moment ago answers `total_exact: false`
   * without counting again for a while (part 2 allows an estimate beyond 10 000), unless a write
   * that could take paths off the list has been answered since (a bumped generation): a total that
   * fell to 10 000 or fewer is exact at once (part 2). `count=exact` always counts.
   */
  private readonly overCap = new Map<string, OverCap>();

  constructor(
    private readonly findings: AccessFindingsRepository,
    @Inject(SETTINGS) private readonly settings: Pick<Settings, 'unusedAccessDays'>,
    private readonly projections: Projections,
  ) {}

  async list(query: AccessFindingsQueryDto): Promise<ListResponse<AccessFindingDto>> {
    const days = query.unused_for_days === undefined ? this.settings.unusedAccessDays : Number(query.unused_for_days);
    const id = (value: string | undefined): number | null => (value === undefined ? null : Number(value));
    const { page, page_size } = pageOf(query);
    const filter = {
      cutoff: new Date(Date.now() - days * DAY_MS),
      deviceId: id(query.device_id),
      userId: id(query.user_id),
      permissionId: id(query.permission_id),
      groupId: id(query.group_id),
    };
    const exact = query.count === 'exact';
    const key = `${days}:${filter.deviceId}:${filter.userId}:${filter.permissionId}:${filter.groupId}`;
    // Read before the count: a write answered after this read bumps past it.
    const generations = exact ? undefined : await this.projections.generations.current(FINDINGS_TABLES);
    const remembered = this.overCap.get(key);
    const knownOver =
      generations !== undefined &&
      remembered !== undefined &&
      remembered.until > Date.now() &&
      remembered.generations === generations.join(',');
    const { rows, total } = await this.findings.page(
      filter,
      directionOf(query.sort, 'asc'),
      (page - 1) * page_size,
      page_size,
      exact ? 'exact' : knownOver ? 'none' : 'capped',
    );
    if (exact) return new ListResponse(rows.map(finding), page, page_size, total, true);
    const counted = knownOver ? EXACT_UP_TO + 1 : total;
    if (!knownOver && counted > EXACT_UP_TO && generations !== undefined) this.rememberOver(key, generations);
    return new ListResponse(rows.map(finding), page, page_size, counted, counted <= EXACT_UP_TO);
  }

  private rememberOver(key: string, generations: readonly number[]): void {
    if (this.overCap.size >= OVER_CAP_KEPT) this.overCap.clear();
    this.overCap.set(key, { until: Date.now() + OVER_CAP_MS, generations: generations.join(',') });
  }
}

function finding(row: FindingRow): AccessFindingDto {
  const id = (value: string | null): number | null => (value === null ? null : Number(value));
  return {
    user_id: id(row.user_id),
    group_id: id(row.group_id),
    device_id: id(row.device_id),
    permission_code:
      row.permission_id === null ? null : (permissionCodeOf(row.permission_id) ?? String(row.permission_id)),
    decided_by: row.decided_by,
    authority_id: id(row.authority_id),
    grant_id: id(row.grant_id),
    authority_permission_id: id(row.authority_permission_id),
    membership_id: id(row.membership_id),
    granted_at: row.granted_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
  };
}
