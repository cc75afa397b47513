import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { DataSource } from 'typeorm';
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
    private readonly dataSource: DataSource,
    private readonly cache: CacheService,
    private readonly replicas: ReadReplicas,
  ) {}

  @Get('live')
  @ApiOperation({ summary: 'The process answers', operationId: 'healthLive' })
  @ApiEnvelope(LivenessDto)
  live(): LivenessDto {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({
    summary: 'The database answers (503 otherwise); reports the cache state',
    operationId: 'healthReady',
  })
  @ApiEnvelope(ReadinessDto, { errors: [503] })
  async ready(): Promise<ReadinessDto> {
    const [database, cache] = await Promise.all([this.probeDatabase(), this.cache.probe()]);
    if (!database) {
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
    };
  }

  private async probeDatabase(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        this.dataSource.query('SELECT 1').then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), DATABASE_PROBE_MS);
        }),
      ]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
