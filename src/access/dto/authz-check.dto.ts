import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { MaxLength } from '../../platform/http/text-length.js';
import { DENIAL_REASONS, type DenialReason } from '../../access-model/access-rules.js';
import { AccessPathDto, DECIDED_BY, IsMoment } from './access.dto.js';

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

  @ApiPropertyOptional({
    enum: ['true', 'false'],
    description: '`true` adds `paths`: every way the permission is allowed, and on a denial `denied_because`',
  })
  @IsOptional()
  @IsIn(['true', 'false'], { message: 'explain must be true or false' })
  explain?: string;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    description:
      'Answer as of this moment (ISO-8601 with an offset) from the access history (needs `access.read` as well); before the history begins: 422 `HISTORY_NOT_AVAILABLE`',
  })
  @IsOptional()
  @IsMoment('at')
  at?: string;
}

export class AuthzDecisionDto {
  @ApiProperty() user_id!: number;
  @ApiProperty() permission!: string;
  @ApiProperty({ type: Number, nullable: true }) device_id!: number | null;
  @ApiProperty() allowed!: boolean;
  @ApiProperty({
    type: String,
    nullable: true,
    enum: DECIDED_BY,
  })
  decided_by!: string | null;
  @ApiProperty({ type: Number, nullable: true }) authority_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) grant_id!: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The group holding the deciding right (or conferring the role); null when the user holds it itself',
  })
  group_id!: number | null;
  @ApiPropertyOptional({
    type: [AccessPathDto],
    description: 'With `explain=true`: every way it is allowed, in deciding order',
  })
  paths?: AccessPathDto[];
  @ApiPropertyOptional({
    enum: DENIAL_REASONS,
    description:
      'With `explain=true`, on a denial only: the first rule that refuses, in the order of part 5: `user_not_active` (pending, suspended or deleted, or not yet existing at `at`), `role_without_admin_access`, else `no_path`',
  })
  denied_because?: DenialReason;
}
