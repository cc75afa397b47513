import { AccessUses } from '../access-model/access-uses.js';
import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { EventsRepository } from '../events/events.repository.js';
import { CacheService } from '../platform/cache/cache.service.js';
import { ApiError } from '../platform/http/api-error.js';
import { ReadReplicas } from '../platform/database/read-replicas.js';
import { Public } from '../platform/http/public.decorator.js';
import { ApiEnvelope } from '../platform/http/openapi/api-envelope.decorator.js';
import { LivenessDto, ReadinessDto } from './health.dto.js';

const DATABASE_PROBE_MS = 2000;

@ApiTags('health')
@Public()
@Controller('health')
export class HealthController {
  constructor(
    private readonly events: EventsRepository,
    private readonly cache: CacheService,
    private readonly replicas: ReadReplicas,
    private readonly uses: AccessUses,
  ) {}

  @Get('live')
  @ApiOperation({ summary: 'The process answers', operationId: 'healthLive' })
  @ApiEnvelope(LivenessDto)
  live(): LivenessDto {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({
    summary: 'The database answers (503 otherwise); reports the cache state and the event feed’s lag',
    operationId: 'healthReady',
  })
  @ApiEnvelope(ReadinessDto, { errors: [503] })
  async ready(): Promise<ReadinessDto> {
    const [lag, cache] = await Promise.all([this.probeDatabase(), this.cache.probe()]);
    if (lag === undefined) {
      throw new ApiError(
        'SERVICE_UNAVAILABLE',
        'The database is unreachable',
        { dependency: 'database', database: 'down', cache },
        { 'Retry-After': '1' },
      );
    }
    return {
      status: 'ok',
      database: 'up',
      cache,
      cache_stats: { ...this.cache.stats },
      read_replicas: this.replicas.status,
      events: { lag_seconds: lag },
      access_uses: { ...this.uses.stats },
    };
  }

  /** The feed's lag when the database answers in time (the query is the probe); undefined otherwise. */
  private async probeDatabase(): Promise<number | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        this.events.lagSeconds(),
        new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), DATABASE_PROBE_MS);
        }),
      ]);
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
