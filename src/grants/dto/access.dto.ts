import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDateString, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { ListMetaDto } from '../../common/openapi/envelope.dto.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../common/list/list-spec.js';

const DECIDED_BY = ['role', 'permission_grant', 'device_owner', 'authority_permission'];
/** An ISO-8601 timestamp that says its offset (`Z` or `+01:00`): a moment, not a wall-clock time. */
const WITH_OFFSET = /(Z|[+-]\d{2}:?\d{2})$/i;

/** One way a permission is allowed. */
export class AccessPathDto {
  @ApiProperty({ enum: DECIDED_BY }) decided_by!: string;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The authority, for `device_owner` and `authority_permission`',
  })
  authority_id!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'The grant, for `permission_grant`' })
  grant_id!: number | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When this way ends by itself (the grant’s or the authority’s expiry)',
  })
  expires_at!: string | null;
}

/** A user allowed a permission on a device, with every reason. */
export class DeviceAccessDto {
  @ApiProperty() user_id!: number;
  @ApiProperty({ type: [AccessPathDto] }) allowed_by!: AccessPathDto[];
}

/** A device on which a user is allowed a permission, with every reason. */
export class UserAccessDto {
  @ApiProperty() device_id!: number;
  @ApiProperty({ type: [AccessPathDto] }) allowed_by!: AccessPathDto[];
}

export class AccessListMetaDto extends ListMetaDto {
  @ApiProperty({ type: String, format: 'date-time', description: 'The moment the answer describes (`at`, or now)' })
  at!: string;
}

export class UserAccessMetaDto extends AccessListMetaDto {
  @ApiProperty({
    enum: ['all', 'devices'],
    description:
      '`all`: the role or a grant allows the permission on every device, and `data` lists only the devices an authority also allows; `devices`: exactly the devices in `data`',
  })
  scope!: string;
}

/** `page`, `page_size` and `at`, shared by the access questions. */
export class AccessPageQueryDto {
  @ApiPropertyOptional({ minimum: 1, default: 1 })
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'page must be an integer' })
  @Min(1)
  page?: number;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'page_size must be an integer' })
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  page_size?: number;

  @ApiPropertyOptional({ enum: ['exact', 'auto'], description: 'Totals here are always exact' })
  @IsOptional()
  @IsIn(['exact', 'auto'])
  count?: string;
}

/** A `sort` parameter of one field, ascending or descending (part 2; ties cannot occur). */
export function SortParam(field: string, fallback: 'asc' | 'desc'): PropertyDecorator {
  const pattern = new RegExp(`^${field}:(asc|desc)$`);
  return (target, key) => {
    ApiPropertyOptional({ enum: [`${field}:asc`, `${field}:desc`], default: `${field}:${fallback}` })(target, key);
    IsOptional()(target, key);
    Matches(pattern, { message: `sort must be ${field}:asc or ${field}:desc` })(target, key);
  };
}

/** `asc` or `desc` from a validated `sort`. */
export function directionOf(sort: string | undefined, fallback: 'asc' | 'desc'): 'asc' | 'desc' {
  return sort === undefined ? fallback : sort.endsWith(':desc') ? 'desc' : 'asc';
}

export class AtQueryDto extends AccessPageQueryDto {
  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    description:
      'Answer as of this moment (ISO-8601 with an offset), from the access history; before the history begins: 422 `HISTORY_NOT_AVAILABLE`',
  })
  @IsOptional()
  @IsDateString({ strict: true }, { message: 'at must be an ISO-8601 timestamp' })
  @Matches(WITH_OFFSET, { message: 'at must say its offset (Z or ±hh:mm)' })
  at?: string;
}

class PermissionAtQueryDto extends AtQueryDto {
  @ApiProperty({ example: 'authorities.revoke', description: 'A device-scoped permission' })
  @IsString()
  @MaxLength(64)
  permission!: string;
}

export class UserAccessQueryDto extends PermissionAtQueryDto {
  @SortParam('device_id', 'asc') sort?: string;
}

export class DeviceAccessQueryDto extends PermissionAtQueryDto {
  @SortParam('user_id', 'asc') sort?: string;

  @ApiPropertyOptional({
    description: 'Comma-separated ways to keep: users allowed by at least one of them',
    example: 'device_owner,authority_permission',
  })
  @IsOptional()
  @IsString()
  @Matches(
    /^(role|permission_grant|device_owner|authority_permission)(,(role|permission_grant|device_owner|authority_permission))*$/,
    {
      message: 'via must be a comma-separated list of role, permission_grant, device_owner, authority_permission',
    },
  )
  via?: string;
}

export { WITH_OFFSET };
