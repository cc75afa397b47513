import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';

const ID = /^[1-9]\d{0,15}$/;

export class AuthzCheckQueryDto {
  @ApiProperty({ example: '42' })
  @Matches(ID, { message: 'user_id must be a positive integer' })
  user_id!: string;

  @ApiProperty({ example: 'authorities.revoke' })
  @IsString()
  @MaxLength(64)
  permission!: string;

  @ApiPropertyOptional({
    example: '7',
    description: 'For device-scoped permissions: evaluate the device-authority layer too',
  })
  @IsOptional()
  @Matches(ID, { message: 'device_id must be a positive integer' })
  device_id?: string;
}

export class AuthzDecisionDto {
  @ApiProperty() user_id!: number;
  @ApiProperty() permission!: string;
  @ApiProperty({ type: Number, nullable: true }) device_id!: number | null;
  @ApiProperty() allowed!: boolean;
  @ApiProperty({
    type: String,
    nullable: true,
    enum: ['role', 'permission_grant', 'device_owner', 'authority_permission'],
  })
  decided_by!: string | null;
  @ApiProperty({ type: Number, nullable: true }) authority_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) grant_id!: number | null;
}
