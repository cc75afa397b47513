import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { IsDateString, IsOptional, IsString } from 'class-validator';
import { MaxLength } from '../../platform/http/text-length.js';
import { IsCatalogueId, IsId } from '../../platform/http/id.validators.js';

/** A user-level grant of one permission (part 6.5); append-only except its revocation stamp. */
export class PermissionGrantDto {
  @ApiProperty() id!: number;
  @ApiProperty() user_id!: number;
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
  @ApiProperty({ minimum: 1 }) @IsId() user_id!: number;
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
  'permission_id',
  'reason',
] as const) {}
