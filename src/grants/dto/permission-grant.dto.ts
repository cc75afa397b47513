import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { IsDateString, IsOptional, IsString } from 'class-validator';
import { MaxLength } from '../../platform/http/text-length.js';
import { IsCatalogueId, IsId } from '../../platform/http/id.validators.js';
import { OneOf } from '../../platform/http/one-of.validator.js';

/** A grant of one permission to a user or a group (part 6.5); append-only except its revocation stamp. */
export class PermissionGrantDto {
  @ApiProperty() id!: number;
  @ApiProperty({ type: Number, nullable: true, description: 'The user holding it (null for a group’s grant)' })
  user_id!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'The group holding it: every member holds it (v1.3)' })
  group_id!: number | null;
  @ApiProperty() permission_id!: number;
  @ApiProperty({ example: 'inbox.delete' }) permission_code!: string;
  @ApiProperty({ type: String, nullable: true }) reason!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) expires_at!: string | null;
  @ApiProperty({ type: Number, nullable: true }) granted_by!: number | null;
  @ApiProperty({ type: String, format: 'date-time' }) granted_at!: string;
  @ApiProperty({ type: Number, nullable: true }) revoked_by!: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revoked_at!: string | null;
  @ApiProperty({ type: String, nullable: true }) revoke_reason!: string | null;
  @ApiProperty({ description: 'Not revoked and not expired (judged at read time)' }) is_active!: boolean;
}

export class GrantPermissionDto {
  @ApiPropertyOptional({ minimum: 1, description: 'Exactly one of `user_id` and `group_id`' })
  @OneOf('group_id')
  @IsId()
  user_id?: number;

  @ApiPropertyOptional({ minimum: 1, description: 'A group: every member it reaches holds the permission' })
  @OneOf('user_id')
  @IsId()
  group_id?: number;

  @ApiProperty({ minimum: 1 }) @IsCatalogueId() permission_id!: number;

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    description: 'Must be in the future; the grant stops counting at once when it passes',
  })
  @IsOptional()
  @IsDateString({ strict: true }, { message: 'expires_at must be an ISO-8601 timestamp' })
  expires_at?: string;
}

/** The same pair and reason as a grant; no expiry. */
export class RevokePermissionDto extends PickType(GrantPermissionDto, [
  'user_id',
  'group_id',
  'permission_id',
  'reason',
] as const) {}
