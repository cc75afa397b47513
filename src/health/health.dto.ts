import { ApiProperty } from '@nestjs/swagger';

export class LivenessDto {
  @ApiProperty({ enum: ['ok'] })
  status!: 'ok';
}

export class CacheStatsDto {
  @ApiProperty() hits!: number;
  @ApiProperty() misses!: number;
  @ApiProperty() failures!: number;
  @ApiProperty() timeouts!: number;
  @ApiProperty() short_circuited!: number;
  @ApiProperty({ description: 'Database loads that filled the cache (concurrent misses of one key load once)' })
  loads!: number;
  @ApiProperty({
    description: 'Writes whose work after the commit failed or did not reach the cache; each dropped the whole cache',
  })
  after_commit_failures!: number;
  @ApiProperty({ description: 'Cache writes after a commit that did not reach the store' }) lost_writes!: number;
  @ApiProperty({ description: 'Entries that could not be read back; served as misses and replaced' })
  unreadable!: number;
  @ApiProperty({
    description: 'Cache lookups not made because their request had spent its 50 ms cache budget (part 7)',
  })
  over_budget!: number;
}

export class ReadReplicaDto {
  @ApiProperty({ description: 'host:port/database of a DATABASE_READ_URLS entry' }) name!: string;
  @ApiProperty({
    enum: ['up', 'lagging', 'down'],
    description:
      '`lagging`: it had not replayed the primary position when last asked; `down`: unreachable, retried after 5 s',
  })
  state!: 'up' | 'lagging' | 'down';
  @ApiProperty({ description: 'Cache-miss reads it served' }) reads!: number;
  @ApiProperty({ description: 'Reads that went to the primary because it lagged or was down' }) skipped!: number;
}

export class FeedHealthDto {
  @ApiProperty({
    minimum: 0,
    example: 0,
    description:
      'Age in seconds of the oldest transaction still holding the event feed back: one that has taken its feed ' +
      'position in its commit step and is not visible yet, so no event committed after it can be read. 0 when none does',
  })
  lag_seconds!: number;
}

export class AccessUsesHealthDto {
  @ApiProperty({ description: 'Uses of grants and authority permissions noted since start (once a minute per path)' })
  noted!: number;
  @ApiProperty({ description: 'Noted uses written to the database' })
  recorded!: number;
  @ApiProperty({ description: 'Noted uses dropped because their batch could not be written (never a failed request)' })
  dropped!: number;
  @ApiProperty({ description: 'Batches that could not be written' })
  failed_flushes!: number;
}

export class ReadinessDto {
  @ApiProperty({ enum: ['ok'] })
  status!: 'ok';

  @ApiProperty({ enum: ['up'] })
  database!: 'up';

  @ApiProperty({ enum: ['up', 'down', 'memory'], description: '`memory`: the in-process cache (no REDIS_URL)' })
  cache!: 'up' | 'down' | 'memory';

  @ApiProperty({ type: CacheStatsDto })
  cache_stats!: CacheStatsDto;

  @ApiProperty({ type: [ReadReplicaDto], description: 'The read replicas (DATABASE_READ_URLS); empty without' })
  read_replicas!: ReadReplicaDto[];

  @ApiProperty({ type: FeedHealthDto, description: 'The event feed (part 6.12)' })
  events!: FeedHealthDto;

  @ApiProperty({
    type: AccessUsesHealthDto,
    description: 'Last-use recording of access paths (part 6.16), this instance',
  })
  access_uses!: AccessUsesHealthDto;
}
