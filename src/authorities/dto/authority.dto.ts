import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDateString, IsOptional, IsString } from 'class-validator';
import { MaxLength } from '../../platform/http/text-length.js';
import { IsId } from '../../platform/http/id.validators.js';
import { OneOf } from '../../platform/http/one-of.validator.js';
import { SoftDeletableDto } from '../../platform/http/openapi/audit-fields.dto.js';

/** A user's or a group's relationship to a device (part 6.3). */
export class AuthorityDto extends SoftDeletableDto {
  @ApiProperty({ example: 42 }) id!: number;
  @ApiProperty() device_id!: number;
  @ApiProperty({ type: Number, nullable: true, description: 'The user holding it; null for a group’s authority' })
  user_id!: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The group holding it (every member holds it); null for a user’s authority (v1.3)',
  })
  group_id!: number | null;
  @ApiProperty({ description: 'Read-only; set only by transfer-owner' }) owner!: boolean;
  @ApiProperty({ description: 'False whenever the authority is revoked' }) is_active!: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revoked_at!: string | null;
  @ApiProperty({ type: Number, nullable: true }) revoked_by!: number | null;
  @ApiProperty({ type: String, nullable: true }) revoke_reason!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) expires_at!: string | null;
  @ApiProperty({ type: String, nullable: true, maxLength: 100 }) label!: string | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Who made the relationship: the creator, or the actor of the transfer that made or revived it',
  })
  assigned_by!: number | null;
  @ApiProperty({ type: String, format: 'date-time', description: 'When it was made, or revived by a transfer' })
  assigned_at!: string;
}

export class CreateAuthorityDto {
  @ApiProperty({ minimum: 1 }) @IsId() device_id!: number;

  @ApiPropertyOptional({ minimum: 1, description: 'Exactly one of `user_id` and `group_id`' })
  @OneOf('group_id')
  @IsId()
  user_id?: number;

  @ApiPropertyOptional({ minimum: 1, description: 'A group: every member it reaches holds the authority' })
  @OneOf('user_id')
  @IsId()
  group_id?: number;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    description: 'Must be in the future; the authority stops counting at once when it passes',
  })
  @IsOptional()
  @IsDateString({ strict: true }, { message: 'expires_at must be an ISO-8601 timestamp' })
  expires_at?: string;

  @ApiPropertyOptional({ maxLength: 100 })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  label?: string;
}

export class UpdateAuthorityDto {
  @ApiPropertyOptional({ type: String, format: 'date-time', nullable: true, description: 'null removes the expiry' })
  @IsOptional()
  @IsDateString({ strict: true }, { message: 'expires_at must be an ISO-8601 timestamp' })
  expires_at?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 100 })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  label?: string | null;
}

export class RevokeAuthorityDto {
  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}
