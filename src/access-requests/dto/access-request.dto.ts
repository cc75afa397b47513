import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsString, Matches, Min } from 'class-validator';
import { Length, MaxLength } from '../../platform/http/text-length.js';
import { AuditedDto } from '../../platform/http/openapi/audit-fields.dto.js';
import { IsCatalogueId, IsId } from '../../platform/http/id.validators.js';
import { Present } from '../../platform/http/validation.js';

export const ACCESS_REQUEST_STATES = ['pending', 'approved', 'denied', 'cancelled', 'expired'] as const;
export type AccessRequestState = (typeof ACCESS_REQUEST_STATES)[number];

/** The shortest access a request may ask for (part 6.15); the longest is ACCESS_REQUEST_MAX_SECONDS. */
export const MIN_DURATION_SECONDS = 300;

const NOT_BLANK = /\S/;

/** An access request (part 6.15). */
export class AccessRequestDto extends AuditedDto {
  @ApiProperty({ example: 12 }) id!: number;
  @ApiProperty({ example: 3 }) requester_id!: number;
  @ApiProperty({ example: 7 }) device_id!: number;
  @ApiProperty({ example: 42, description: 'The requester’s authority on the device' }) authority_id!: number;
  @ApiProperty({ example: 20 }) permission_id!: number;
  @ApiProperty({ example: 'authorities.revoke' }) permission_code!: string;
  @ApiProperty({ minLength: 1, maxLength: 500 }) reason!: string;
  @ApiProperty({ minimum: MIN_DURATION_SECONDS, example: 3600, description: 'How long the access is asked for' })
  duration_seconds!: number;
  @ApiProperty({
    enum: ACCESS_REQUEST_STATES,
    description: 'A pending request whose `expires_at` has passed reads `expired` at once',
  })
  state!: AccessRequestState;
  @ApiProperty({
    type: String,
    format: 'date-time',
    description: 'When a pending request expires (ACCESS_REQUEST_PENDING_HOURS after creation)',
  })
  expires_at!: string;
  @ApiProperty({ type: Number, nullable: true }) decided_by!: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) decided_at!: string | null;
  @ApiProperty({ type: String, nullable: true }) decision_reason!: string | null;
  @ApiProperty({ type: Number, nullable: true, description: 'The authority permission an approval granted' })
  authority_permission_id!: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When the approved access ends' })
  access_expires_at!: string | null;
  @ApiProperty({ type: [Number], description: 'The users notified of the request' }) approvers!: number[];
}

export class CreateAccessRequestDto {
  @ApiProperty({ minimum: 1, example: 7 }) @IsId() device_id!: number;

  @ApiProperty({ minimum: 1, example: 20, description: 'A device-scoped permission' })
  @IsCatalogueId()
  permission_id!: number;

  @ApiProperty({ minLength: 1, maxLength: 500, example: 'Revoke the lost badge of the night shift' })
  @IsString()
  @Length(1, 500)
  @Matches(NOT_BLANK, { message: 'reason must not be blank' })
  reason!: string;

  @ApiProperty({
    minimum: MIN_DURATION_SECONDS,
    example: 3600,
    description: 'At most ACCESS_REQUEST_MAX_SECONDS (30 days by default)',
  })
  @IsInt()
  @Min(MIN_DURATION_SECONDS)
  duration_seconds!: number;
}

export class ApproveAccessRequestDto {
  @ApiPropertyOptional({ maxLength: 500 })
  @Present()
  @IsString()
  @MaxLength(500)
  reason?: string;

  @ApiPropertyOptional({
    minimum: MIN_DURATION_SECONDS,
    description: 'Shortens the access (at most the duration asked for; longer is a 400)',
  })
  @Present()
  @IsInt()
  @Min(MIN_DURATION_SECONDS)
  duration_seconds?: number;
}

export class DenyAccessRequestDto {
  @ApiProperty({ minLength: 1, maxLength: 500 })
  @IsString()
  @Length(1, 500)
  @Matches(NOT_BLANK, { message: 'reason must not be blank' })
  reason!: string;
}

export class CancelAccessRequestDto {
  @ApiPropertyOptional({ maxLength: 500 })
  @Present()
  @IsString()
  @MaxLength(500)
  reason?: string;
}
