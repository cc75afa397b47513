import { Describe } from '../platform/http/openapi/describe.decorator.js';
import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { ListMetaDto } from '../platform/http/openapi/envelope.dto.js';
import type { ListResponse } from '../platform/http/responses.js';
import { AccessFindingsService } from './access-findings.service.js';
import { AccessFindingDto, AccessFindingsQueryDto } from './dto/access-finding.dto.js';

/** `/v1/admin/access-findings` (part 6.16): who holds a right nobody has used for a while. */
@ApiTags('access-reviews')
@Controller('v1/admin/access-findings')
export class AccessFindingsController {
  constructor(private readonly findings: AccessFindingsService) {}

  @Get()
  @Authorize({
    permission: 'access.read',
  })
  @Describe({
    summary: 'Revocable paths (permission grants, authority permissions) not used for a number of days',
    description:
      'Live grants and authority permissions (on authorities that are not revoked, deleted or expired) whose last use is older than `unused_for_days` (default `UNUSED_ACCESS_DAYS`), or that were never used since granted. Oldest grant first. `device_id` leaves grants out (they hold on every device).',
    returns: AccessFindingDto,
    listMeta: ListMetaDto,
    errors: [400],
  })
  list(@Query() query: AccessFindingsQueryDto): Promise<ListResponse<AccessFindingDto>> {
    return this.findings.list(query);
  }
}
