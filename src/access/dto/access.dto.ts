import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsIn, IsOptional, IsString, Matches, ValidateBy } from 'class-validator';
import { MaxLength, MinLength } from '../../platform/http/text-length.js';
import { isIsoTimestamp } from '../../platform/http/list/list-query.parser.js';
import { ListMetaDto } from '../../platform/http/openapi/envelope.dto.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../platform/http/list/list-spec.js';

export { DECIDED_BY } from '../../platform/auth/decision.js';
import { DECIDED_BY } from '../../platform/auth/decision.js';

const WAY_PATTERN = DECIDED_BY.join('|');

/** One way a permission is allowed. */
export class AccessPathDto {
  @ApiProperty({ enum: DECIDED_BY }) decided_by!: string;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The authority, for `device_owner` and `authority_permission`',
  })
  authority_id!: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The grant, for `permission_grant` and `group_permission_grant`',
  })
  grant_id!: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The group holding the right (or conferring the role); null when the user holds it itself',
  })
  group_id!: number | null;
  @ApiProperty({
    type: [Number],
    description: 'The chain of group ids from the user’s own group to `group_id`; `[]` when the user holds it itself',
  })
  via!: readonly number[];
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When this way ends by itself (the grant’s or the authority’s expiry)',
  })
  expires_at!: string | null;
}

/** One way a permission is allowed, with when a request last went through it (part 6.16). */
export class AllowedByDto extends AccessPathDto {
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description:
      'When a request was last allowed this way (grants and authority permissions, recorded at most once a minute per instance); null: never since recording began, and always for a role or ownership',
  })
  last_used_at!: string | null;
}

/** A user allowed a permission on a device, with every reason. */
export class DeviceAccessDto {
  @ApiProperty() user_id!: number;
  @ApiProperty({ type: [AllowedByDto] }) allowed_by!: AllowedByDto[];
}

/** A device on which a user is allowed a permission, with every reason. */
export class UserAccessDto {
  @ApiProperty() device_id!: number;
  @ApiProperty({ type: [AllowedByDto] }) allowed_by!: AllowedByDto[];
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

/** An ISO-8601 timestamp with its offset, a real calendar moment (the list filters' rule). */
export function IsMoment(field: string): PropertyDecorator {
  return ValidateBy({
    name: 'timestamp',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && isIsoTimestamp(value),
      defaultMessage: () => `${field} must be an ISO-8601 timestamp with an offset, such as 2026-11-24T14:00:00Z`,
    },
  });
}

/** A positive integer written plainly (`1e3`, `0x10` and `01` are not), at most `max`. */
function IsPlainInteger(field: string, max: number): PropertyDecorator {
  return (target, key) => {
    Matches(/^[1-9]\d{0,14}$/, { message: `${field} must be a positive integer` })(target, key);
    ValidateBy({
      name: 'max',
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || Number(value) <= max,
        defaultMessage: () => `${field} must not be greater than ${max}`,
      },
    })(target, key);
  };
}

/** `page`, `page_size` and `count`, shared by the access questions (parsed like every list's). */
export class AccessPageQueryDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, default: 1 })
  @IsOptional()
  @IsPlainInteger('page', Number.MAX_SAFE_INTEGER)
  page?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })
  @IsOptional()
  @IsPlainInteger('page_size', MAX_PAGE_SIZE)
  page_size?: string;

  @ApiPropertyOptional({
    enum: ['exact', 'auto'],
    description:
      '`exact` always counts; `auto` (default) may estimate past 10 000 users on the device question (`meta.total_exact: false`)',
  })
  @IsOptional()
  @IsIn(['exact', 'auto'])
  count?: string;
}

/** The page asked for, from validated strings. */
export function pageOf(query: AccessPageQueryDto): { page: number; page_size: number } {
  return { page: Number(query.page ?? 1), page_size: Number(query.page_size ?? DEFAULT_PAGE_SIZE) };
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
  @IsMoment('at')
  at?: string;
}

class PermissionAtQueryDto extends AtQueryDto {
  @ApiProperty({ example: 'authorities.revoke', description: 'A device-scoped permission' })
  @IsDefined({ message: 'permission is required (a device-scoped permission code)' })
  @IsString()
  @MinLength(1, { message: 'permission must not be empty' })
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
  @Matches(new RegExp(`^(${WAY_PATTERN})(,(${WAY_PATTERN}))*$`), {
    message: `via must be a comma-separated list of ${DECIDED_BY.join(', ')}`,
  })
  via?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description:
      'Only users allowed by a way through this group: a grant, an authority’s permission or a role held by it or by a group it sits in, for the users it reaches',
  })
  @IsOptional()
  @Matches(/^[1-9]\d{0,14}$/, { message: 'group_id must be a positive integer' })
  group_id?: string;
}
