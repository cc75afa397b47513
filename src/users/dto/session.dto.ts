import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { MaxLength } from '../../platform/http/text-length.js';

/** A sign-in session of a user (part 6.1); the token itself is never stored or shown. */
export class SessionDto {
  @ApiProperty({ format: 'uuid', example: '3f0c7a3e-8d55-4d7e-9b8e-1f6f5b3c2a10' }) id!: string;
  @ApiProperty({ example: 42 }) user_id!: number;
  @ApiProperty({ type: String, format: 'date-time' }) created_at!: string;
  @ApiProperty({ type: String, format: 'date-time' }) expires_at!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revoked_at!: string | null;
  @ApiProperty({ type: Number, nullable: true }) revoked_by!: number | null;
  @ApiProperty({ type: String, nullable: true }) revoke_reason!: string | null;
  @ApiProperty({ description: 'Neither revoked nor expired' }) is_active!: boolean;
}

export class RevokeSessionsDto {
  @ApiPropertyOptional({ maxLength: 500, description: 'Recorded on each session and in its audit event' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}

export class SessionsRevokedDto {
  @ApiProperty({ example: 42 }) user_id!: number;
  @ApiProperty({ example: 2, description: 'How many live sessions were revoked (0 is fine)' }) revoked!: number;
}
