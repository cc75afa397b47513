import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { Length, MaxLength } from '../platform/http/text-length.js';
import { IsId } from '../platform/http/id.validators.js';
import { AuditedDto } from '../platform/http/openapi/audit-fields.dto.js';

export const PLATFORMS = ['ios', 'android', 'web'] as const;
const TOKEN = /^[\x21-\x7e]+$/;

/** A phone or browser registered for push (part 6.9); the token itself is never returned. */
export class MobileDeviceDto extends AuditedDto {
  @ApiProperty() id!: number;
  @ApiProperty() user_id!: number;
  @ApiProperty({ enum: PLATFORMS }) platform!: string;
  @ApiProperty({ example: 'x9Qk2A', description: 'Last 6 characters of the push token' }) push_token_hint!: string;
  @ApiProperty({ type: String, nullable: true }) app_version!: string | null;
  @ApiProperty({ type: String, nullable: true }) device_model!: string | null;
  @ApiProperty() is_active!: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) deactivated_at!: string | null;
  @ApiProperty({ type: Number, nullable: true }) deactivated_by!: number | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: '`unregistered` when the push provider rejected the token',
  })
  deactivation_reason!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) token_refreshed_at!: string | null;
}

export class RegisterMobileDeviceDto {
  @ApiProperty({ minimum: 1 }) @IsId() user_id!: number;
  @ApiProperty({ enum: PLATFORMS }) @IsIn(PLATFORMS) platform!: string;

  @ApiProperty({ minLength: 8, maxLength: 4096, description: 'Stored, never returned; unique' })
  @IsString()
  @Length(8, 4096)
  @Matches(TOKEN, { message: 'push_token must be printable ASCII without spaces' })
  push_token!: string;

  @ApiPropertyOptional({ maxLength: 32 }) @IsOptional() @IsString() @MaxLength(32) app_version?: string;
  @ApiPropertyOptional({ maxLength: 100 }) @IsOptional() @IsString() @MaxLength(100) device_model?: string;
}

export class DeactivateMobileDeviceDto {
  @ApiPropertyOptional({ maxLength: 200 }) @IsOptional() @IsString() @Length(1, 200) reason?: string;
}

export class RefreshTokenDto {
  @ApiProperty({ minLength: 8, maxLength: 4096 })
  @IsString()
  @Length(8, 4096)
  @Matches(TOKEN, { message: 'push_token must be printable ASCII without spaces' })
  push_token!: string;
}
