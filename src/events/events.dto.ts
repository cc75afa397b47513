import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ApiResourceId } from '../audit-events/audit-event.dto.js';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { MaxLength } from '../platform/http/text-length.js';

/** An event type: the audit action (`authority.revoke`) or a worker event (`push.failed`). */
export const EVENT_TYPE = /^[a-z_]+\.[a-z_]+$/;

export class EventDto {
  @ApiProperty({
    example: '00000000000000000812-00000000000000000042',
    description: 'Plain string order is feed order: pass the last one seen as `after`',
  })
  id!: string;
  @ApiProperty({
    example: 'authority.revoke',
    description: 'The audit action, or a worker event such as `push.failed`',
  })
  type!: string;
  @ApiProperty({ type: String, format: 'date-time' }) occurred_at!: string;
  @ApiProperty({ type: Number, nullable: true }) actor_id!: number | null;
  @ApiProperty({ type: String, nullable: true }) request_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'authority' }) resource_type!: string | null;
  @ApiResourceId()
  resource_id!: number | string | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    properties: {
      changes: {
        type: 'object',
        description: 'An audit event’s changes: `{field: [before, after]}`',
        additionalProperties: { type: 'array', minItems: 2, maxItems: 2, items: { nullable: true } },
      },
    },
    description:
      'For a write: the resource as the API shows it after the change (secrets left out) and `changes`; for a worker event its facts (`message_id`, `mobile_device_id`, …)',
  })
  data!: object;
}

export class EventsQueryDto {
  @ApiPropertyOptional({ description: 'An event id: only events after it (absent: from the oldest kept)' })
  @IsOptional()
  @IsString()
  @Matches(/^(\d{20}-\d{20})?$/, { message: 'after must be an event id (20 digits, a hyphen, 20 digits)' })
  after?: string;

  @ApiPropertyOptional({
    description: 'Comma-separated event types; absent: every type',
    example: 'authority.revoke,user.suspend',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  types?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 1000, default: 100 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;

  @ApiPropertyOptional({ minimum: 0, maximum: 30, default: 0, description: 'Seconds to wait for a first new event' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(30)
  wait?: number;
}
