import { Inject, Injectable } from '@nestjs/common';
import { directionOf, pageOf } from '../access/dto/access.dto.js';
import { permissionCodeOf } from '../platform/auth/permissions.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { ListResponse } from '../platform/http/responses.js';
import { AccessFindingsRepository, EXACT_UP_TO, type FindingRow } from './access-findings.repository.js';
import type { AccessFindingDto, AccessFindingsQueryDto } from './dto/access-finding.dto.js';

const DAY_MS = 86_400_000;

/** `GET /access-findings` (part 6.16): revocable paths unused for a number of days, never cached (time moves them). */
@Injectable()
export class AccessFindingsService {
  constructor(
    private readonly findings: AccessFindingsRepository,
    @Inject(SETTINGS) private readonly settings: Pick<Settings, 'unusedAccessDays'>,
  ) {}

  async list(query: AccessFindingsQueryDto): Promise<ListResponse<AccessFindingDto>> {
    const days = query.unused_for_days === undefined ? this.settings.unusedAccessDays : Number(query.unused_for_days);
    const id = (value: string | undefined): number | null => (value === undefined ? null : Number(value));
    const { page, page_size } = pageOf(query);
    const { rows, total } = await this.findings.page(
      {
        cutoff: new Date(Date.now() - days * DAY_MS),
        deviceId: id(query.device_id),
        userId: id(query.user_id),
        permissionId: id(query.permission_id),
      },
      directionOf(query.sort, 'asc'),
      (page - 1) * page_size,
      page_size,
    );
    return new ListResponse(rows.map(finding), page, page_size, total, total <= EXACT_UP_TO);
  }
}

function finding(row: FindingRow): AccessFindingDto {
  const id = (value: string | null): number | null => (value === null ? null : Number(value));
  return {
    user_id: Number(row.user_id),
    device_id: id(row.device_id),
    permission_code: permissionCodeOf(row.permission_id) ?? String(row.permission_id),
    decided_by: row.decided_by,
    authority_id: id(row.authority_id),
    grant_id: id(row.grant_id),
    authority_permission_id: id(row.authority_permission_id),
    granted_at: row.granted_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
  };
}
