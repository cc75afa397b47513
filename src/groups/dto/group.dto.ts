import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsDateString,
  IsIn,
  IsOptional,
  IsString,
  Matches,
} from 'class-validator';
import { AccessPageQueryDto, SortParam } from '../../access/dto/access.dto.js';
import { Length, MaxLength } from '../../platform/http/text-length.js';
import { IsCatalogueId, IsId } from '../../platform/http/id.validators.js';
import { Present } from '../../platform/http/validation.js';
import { OneOf } from '../../platform/http/one-of.validator.js';
import { EachItem } from '../../platform/http/bulk-items.js';
import { SoftDeletableDto } from '../../platform/http/openapi/audit-fields.dto.js';
import { BulkErrorDto } from '../../grants/dto/authority-permission.dto.js';

const NOT_BLANK = /\S/;

/** A team that holds a role and rights for its members (part 6.18). */
export class GroupDto extends SoftDeletableDto {
  @ApiProperty({ example: 7 }) id!: number;
  @ApiProperty({ minLength: 1, maxLength: 100, example: 'Night operators, building B' }) name!: string;
  @ApiProperty({ type: String, nullable: true, maxLength: 500 }) description!: string | null;
  @ApiProperty({ type: Number, nullable: true, description: 'The role the group confers on its members' })
  role_id!: number | null;
  @ApiProperty({ type: String, nullable: true, maxLength: 255, description: 'The identity provider’s id' })
  external_id!: string | null;
  @ApiProperty({ description: 'Direct members (users and groups) whose membership is live' }) member_count!: number;
}

export class CreateGroupDto {
  @ApiProperty({ minLength: 1, maxLength: 100, description: 'Unique among live and deleted groups, case-insensitive' })
  @IsString()
  @Length(1, 100)
  @Matches(NOT_BLANK, { message: 'name must not be blank' })
  name!: string;

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  @ApiPropertyOptional({ minimum: 1, description: 'Conferred on every member; the rank rule of part 5 applies' })
  @IsOptional()
  @IsCatalogueId()
  role_id?: number;

  @ApiPropertyOptional({ minLength: 1, maxLength: 255 })
  @IsOptional()
  @IsString()
  @Length(1, 255)
  external_id?: string;
}

export class UpdateGroupDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 100 })
  @Present()
  @IsString()
  @Length(1, 100)
  @Matches(NOT_BLANK, { message: 'name must not be blank' })
  name?: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 500, description: 'null removes it' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string | null;

  @ApiPropertyOptional({ type: Number, nullable: true, minimum: 1, description: 'null: the group confers no role' })
  @IsOptional()
  @IsCatalogueId()
  role_id?: number | null;

  @ApiPropertyOptional({ type: String, nullable: true, minLength: 1, maxLength: 255 })
  @IsOptional()
  @IsString()
  @Length(1, 255)
  external_id?: string | null;
}

/** One member of a membership change: a user or a group (exactly one). */
export class MemberRefDto {
  @ApiPropertyOptional({ minimum: 1 }) @OneOf('group_id') @IsId() user_id?: number;
  @ApiPropertyOptional({ minimum: 1, description: 'A group nested in this one' })
  @OneOf('user_id')
  @IsId()
  group_id?: number;
}

export class AddMembersDto {
  @ApiProperty({ type: [MemberRefDto], minItems: 1, maxItems: 1000 })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @EachItem(MemberRefDto)
  members!: MemberRefDto[];

  @ApiPropertyOptional({ type: String, format: 'date-time', description: 'In the future; the memberships end then' })
  @IsOptional()
  @IsDateString({ strict: true }, { message: 'expires_at must be an ISO-8601 timestamp' })
  expires_at?: string;

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}

/** The same members and reason as an addition; no expiry. */
export class RemoveMembersDto extends PickType(AddMembersDto, ['members', 'reason'] as const) {}

/** A membership of a user or a group in a group, append-only (part 6.18). */
export class MembershipDto {
  @ApiProperty() id!: number;
  @ApiProperty() group_id!: number;
  @ApiProperty({ type: Number, nullable: true }) user_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) member_group_id!: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) expires_at!: string | null;
  @ApiProperty({ type: Number, nullable: true }) added_by!: number | null;
  @ApiProperty({ type: String, format: 'date-time' }) added_at!: string;
  @ApiProperty({ type: Number, nullable: true }) removed_by!: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) removed_at!: string | null;
  @ApiProperty({ type: String, nullable: true }) remove_reason!: string | null;
  @ApiProperty({ description: 'Not removed and not expired (judged at read time)' }) is_active!: boolean;
}

/** A user reached by a group (`transitive=true`), or a group a user belongs to. */
export class ReachedMemberDto {
  @ApiProperty() user_id!: number;
  @ApiProperty({ type: [Number], description: 'Group ids from the user’s own group to this one' }) via!: number[];
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'The earliest expiry along `via`' })
  expires_at!: string | null;
}

export class UserGroupDto {
  @ApiProperty() group_id!: number;
  @ApiProperty({ type: [Number], description: 'Group ids from the user’s own group to this one' }) via!: number[];
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'The earliest expiry along `via`' })
  expires_at!: string | null;
}

export class MemberResultDto {
  @ApiProperty() index!: number;
  @ApiProperty({ type: Number, nullable: true }) user_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) group_id!: number | null;
  @ApiProperty({ enum: ['added', 'already_member', 'removed', 'not_member', 'failed'] }) status!: string;
  @ApiProperty({ type: Number, nullable: true }) membership_id!: number | null;
  @ApiProperty({ type: BulkErrorDto, nullable: true }) error!: BulkErrorDto | null;
}

export class MembersResponseDto {
  @ApiProperty({ description: 'Items received' }) accepted!: number;
  @ApiProperty({ description: 'Items that did not fail' }) processed!: number;
  @ApiProperty({ description: 'Items that failed' }) failed!: number;
  @ApiProperty({ type: [MemberResultDto] }) results!: MemberResultDto[];
}

/** `GET /groups/{id}/members`: the list parameters of part 2, and `transitive`. */
export class MembersQueryDto extends AccessPageQueryDto {
  @ApiPropertyOptional({
    description:
      '`id`, `added_at` (`:asc` or `:desc`, comma-separated); with `transitive=true` only `user_id:asc` or `user_id:desc`',
    default: 'id:asc',
  })
  @IsOptional()
  @IsString()
  sort?: string;

  @ApiPropertyOptional({ enum: ['user', 'group'], description: 'Direct memberships of users or of groups' })
  @IsOptional()
  @IsIn(['user', 'group'])
  member_type?: string;

  @ApiPropertyOptional({ enum: ['true', 'false'], description: 'Not removed and not expired' })
  @IsOptional()
  @IsIn(['true', 'false'])
  is_active?: string;

  @ApiPropertyOptional({
    enum: ['true', 'false'],
    default: 'false',
    description: 'Every user reached, directly or through nested groups, one row per user with `via`',
  })
  @IsOptional()
  @IsIn(['true', 'false'])
  transitive?: string;
}

/** `GET /users/{id}/groups`: a page of the user's groups, by group id. */
export class UserGroupsQueryDto extends AccessPageQueryDto {
  @SortParam('group_id', 'asc') sort?: string;
}
