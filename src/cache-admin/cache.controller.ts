import { Describe } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import type { AcceptedResponse } from '../platform/http/responses.js';
import { AcceptedJobDto } from '../platform/jobs/jobs.dto.js';
import { CacheRebuildService } from './cache-rebuild.service.js';
import { RebuildCacheDto } from './rebuild-cache.dto.js';

/** `/v1/admin/cache` (part 6.14). */
@ApiTags('cache')
@Controller('v1/admin/cache')
export class CacheController {
  constructor(private readonly rebuilds: CacheRebuildService) {}

  @Post('rebuild')
  @Authorize({
    permission: 'cache.rebuild',
  })
  @Describe({
    summary: 'Drop and warm the chosen cached projections (202 with a job)',
    description:
      'For use after a cache failover or a restore of the database from a backup. Reads stay correct while it runs; ' +
      'the job result is `{scope, entries_written}`.',
    returns: AcceptedJobDto,
    status: 202,
    errors: [400],
  })
  rebuild(@Body() dto: RebuildCacheDto): Promise<AcceptedResponse<AcceptedJobDto>> {
    return this.rebuilds.request(dto.scope ?? 'all');
  }
}
