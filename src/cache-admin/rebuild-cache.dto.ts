import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';

export const REBUILD_SCOPES = ['all', 'auth', 'devices', 'details', 'lists'] as const;
export type RebuildScope = (typeof REBUILD_SCOPES)[number];

export class RebuildCacheDto {
  @ApiPropertyOptional({
    enum: REBUILD_SCOPES,
    default: 'all',
    description:
      '`auth`: sessions and users of live sessions; `devices`: every device authority set; `details`: detail ' +
      'entries and read-state counts; `lists`: cached list pages; `all`: everything (the whole cache is dropped first).',
  })
  @IsOptional()
  @IsIn(REBUILD_SCOPES)
  scope?: RebuildScope;
}

/** The result of a `cache-rebuild` job. */
export class CacheRebuildResultDto {
  @ApiProperty({ enum: REBUILD_SCOPES }) scope!: RebuildScope;
  @ApiProperty({ description: 'Entries written while warming (detail entries are refilled on their next read)' })
  entries_written!: number;
}
