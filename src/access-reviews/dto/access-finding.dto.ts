import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches, ValidateBy } from 'class-validator';
import { AccessPageQueryDto, SortParam } from '../../access/dto/access.dto.js';

/** A revocable path nobody has used for a while (part 6.16). */
export class AccessFindingDto {
  @ApiProperty({ type: Number, nullable: true, description: 'null for a group’s right (unused by every member)' })
  user_id!: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The group holding the right, or the group of a membership; null for a user’s own path',
  })
  group_id!: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'null for a permission grant (it allows on every device) and for a membership',
  })
  device_id!: number | null;
  @ApiProperty({ type: String, nullable: true, description: 'null for a membership' })
  permission_code!: string | null;
  @ApiProperty({
    enum: [
      'permission_grant',
      'group_permission_grant',
      'authority_permission',
      'group_authority_permission',
      'group_membership',
    ],
    description: '`group_membership`: a member that used none of the rights its group confers',
  })
  decided_by!: string;
  @ApiProperty({ type: Number, nullable: true }) authority_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) grant_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) authority_permission_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) membership_id!: number | null;
  @ApiProperty({ type: String, format: 'date-time', description: 'For a membership: when the member was added' })
  granted_at!: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'null: never used since it was granted (or since recording began)',
  })
  last_used_at!: string | null;
}

const ID = /^[1-9]\d{0,14}$/;

export class AccessFindingsQueryDto extends AccessPageQueryDto {
  @SortParam('granted_at', 'asc')
  sort?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 3650,
    description: 'Unused for at least this many days (default UNUSED_ACCESS_DAYS); never used counts as unused',
  })
  @IsOptional()
  @Matches(/^(0|[1-9]\d{0,3})$/, { message: 'unused_for_days must be an integer from 0 to 3650' })
  @ValidateBy({
    name: 'max',
    validator: {
      validate: (value: unknown) => typeof value !== 'string' || Number(value) <= 3650,
      defaultMessage: () => 'unused_for_days must be an integer from 0 to 3650',
    },
  })
  unused_for_days?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: 'Paths on this device (grants, which hold everywhere, are left out)',
  })
  @IsOptional()
  @Matches(ID, { message: 'device_id must be a positive integer' })
  device_id?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: 'The user’s own paths and its memberships (groups’ rights are left out)',
  })
  @IsOptional()
  @Matches(ID, { message: 'user_id must be a positive integer' })
  user_id?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: 'The group’s rights and the memberships in it (users’ own paths are left out)',
  })
  @IsOptional()
  @Matches(ID, { message: 'group_id must be a positive integer' })
  group_id?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1 })
  @IsOptional()
  @Matches(ID, { message: 'permission_id must be a positive integer' })
  permission_id?: string;
}
