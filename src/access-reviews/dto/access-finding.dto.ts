import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches, ValidateBy } from 'class-validator';
import { AccessPageQueryDto, SortParam } from '../../access/dto/access.dto.js';

/** A revocable path nobody has used for a while (part 6.16). */
export class AccessFindingDto {
  @ApiProperty() user_id!: number;
  @ApiProperty({ type: Number, nullable: true, description: 'null for a permission grant (it allows on every device)' })
  device_id!: number | null;
  @ApiProperty() permission_code!: string;
  @ApiProperty({ enum: ['permission_grant', 'authority_permission'] }) decided_by!: string;
  @ApiProperty({ type: Number, nullable: true }) authority_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) grant_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) authority_permission_id!: number | null;
  @ApiProperty({ type: String, format: 'date-time' }) granted_at!: string;
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

  @ApiPropertyOptional({ type: 'integer', minimum: 1 })
  @IsOptional()
  @Matches(ID, { message: 'user_id must be a positive integer' })
  user_id?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1 })
  @IsOptional()
  @Matches(ID, { message: 'permission_id must be a positive integer' })
  permission_id?: string;
}
