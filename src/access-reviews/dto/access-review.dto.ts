import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsDateString,
  IsIn,
  IsInt,
  IsObject,
  IsString,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { Length, MaxLength } from '../../platform/http/text-length.js';
import { AuditedDto } from '../../platform/http/openapi/audit-fields.dto.js';
import { IsId } from '../../platform/http/id.validators.js';
import { EachItem } from '../../platform/http/bulk-items.js';
import { Present } from '../../platform/http/validation.js';

export const ACCESS_REVIEW_STATES = ['preparing', 'open', 'closing', 'closed', 'cancelled'] as const;
export type AccessReviewState = (typeof ACCESS_REVIEW_STATES)[number];
export const REVIEW_DECISIONS = ['keep', 'revoke'] as const;
export type ReviewDecision = (typeof REVIEW_DECISIONS)[number];
export const REVIEW_ITEM_KINDS = ['authority_permission', 'owner', 'grant', 'membership'] as const;

/** How many ids or codes one scope list may name. */
export const MAX_SCOPE_ENTRIES = 1000;
const NOT_BLANK = /\S/;

/** An optional scope list of ids: present means 1–1000 positive integers. */
function ScopeIds(): PropertyDecorator {
  return applyDecorators(
    Present(),
    IsArray(),
    ArrayMinSize(1),
    ArrayMaxSize(MAX_SCOPE_ENTRIES),
    IsInt({ each: true }),
    Min(1, { each: true }),
    Max(Number.MAX_SAFE_INTEGER, { each: true }),
  );
}

/** What a campaign reviews (part 6.16); every list optional, an empty scope is everything. */
export class AccessReviewScopeDto {
  @ApiPropertyOptional({ type: [Number], maxItems: MAX_SCOPE_ENTRIES, description: 'Only these devices (no grants)' })
  @ScopeIds()
  device_ids?: number[];

  @ApiPropertyOptional({ type: [String], maxItems: MAX_SCOPE_ENTRIES, example: ['authorities.revoke'] })
  @Present()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_SCOPE_ENTRIES)
  @IsString({ each: true })
  @MaxLength(100, { each: true })
  permission_codes?: string[];

  @ApiPropertyOptional({ type: [Number], maxItems: MAX_SCOPE_ENTRIES })
  @ScopeIds()
  user_ids?: number[];

  @ApiPropertyOptional({
    type: [Number],
    maxItems: MAX_SCOPE_ENTRIES,
    description: 'Only these groups’ rights and the memberships in them (no user’s own paths)',
  })
  @ScopeIds()
  group_ids?: number[];
}

export class AccessReviewCountsDto {
  @ApiProperty() items!: number;
  @ApiProperty() decided!: number;
  @ApiProperty() keep!: number;
  @ApiProperty() revoke!: number;
  @ApiProperty() undecided!: number;
}

export class AccessReviewResultDto {
  @ApiProperty({ description: 'Paths revoked by the close (or found already revoked)' }) revoked!: number;
  @ApiProperty() kept!: number;
  @ApiProperty() failed!: number;
}

/** A certification campaign (part 6.16). */
export class AccessReviewDto extends AuditedDto {
  @ApiProperty({ example: 4 }) id!: number;
  @ApiProperty({ example: 'Q4 2026 delegated rights' }) name!: string;
  @ApiProperty({ type: AccessReviewScopeDto }) scope!: AccessReviewScopeDto;
  @ApiProperty({ enum: REVIEW_DECISIONS, description: 'Applied at close to undecided items' })
  default_decision!: ReviewDecision;
  @ApiProperty({ type: String, format: 'date-time' }) due_at!: string;
  @ApiProperty({ enum: ACCESS_REVIEW_STATES }) state!: AccessReviewState;
  @ApiProperty({ type: AccessReviewCountsDto }) counts!: AccessReviewCountsDto;
  @ApiProperty({ type: AccessReviewResultDto, nullable: true, description: 'After close' })
  result!: AccessReviewResultDto | null;
  @ApiProperty({ type: String, nullable: true, description: 'The snapshot job, then the close job' })
  job_id!: string | null;
}

/** 202 of `POST /access-reviews`. */
export class AccessReviewAcceptedDto {
  @ApiProperty() id!: number;
  @ApiProperty() job_id!: string;
  @ApiProperty({ enum: ['preparing'] }) state!: 'preparing';
}

export class CreateAccessReviewDto {
  @ApiProperty({ minLength: 1, maxLength: 200 })
  @IsString()
  @Length(1, 200)
  @Matches(NOT_BLANK, { message: 'name must not be blank' })
  name!: string;

  @ApiPropertyOptional({ type: AccessReviewScopeDto })
  @Present()
  @IsObject()
  @ValidateNested()
  @Type(() => AccessReviewScopeDto)
  scope?: AccessReviewScopeDto;

  @ApiProperty({ enum: REVIEW_DECISIONS }) @IsIn(REVIEW_DECISIONS) default_decision!: ReviewDecision;

  @ApiProperty({ type: String, format: 'date-time', description: 'Must be in the future' })
  @IsDateString({ strict: true }, { message: 'due_at must be an ISO-8601 timestamp' })
  due_at!: string;
}

/** One item of a campaign (part 6.16). */
export class AccessReviewItemDto {
  @ApiProperty() id!: number;
  @ApiProperty({ enum: REVIEW_ITEM_KINDS }) kind!: (typeof REVIEW_ITEM_KINDS)[number];
  @ApiProperty({ type: Number, nullable: true, description: 'null for a group’s right' }) user_id!: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The group holding the right, or the group of a membership; null for a user’s own path',
  })
  group_id!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'null for a permission grant or a membership' })
  device_id!: number | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'null for an owner’s authority (every device-scoped right) and for a membership',
  })
  permission_code!: string | null;
  @ApiProperty({
    enum: [
      'permission_grant',
      'group_permission_grant',
      'authority_permission',
      'group_authority_permission',
      'device_owner',
      'group_membership',
    ],
  })
  decided_by!: string;
  @ApiProperty({ type: Number, nullable: true }) authority_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) grant_id!: number | null;
  @ApiProperty({ type: Number, nullable: true }) authority_permission_id!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'A membership’s item: the membership' })
  membership_id!: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_used_at!: string | null;
  @ApiProperty({ enum: REVIEW_DECISIONS, description: '`revoke` when unused for the campaign’s UNUSED_ACCESS_DAYS' })
  recommendation!: ReviewDecision;
  @ApiProperty({ description: 'false for an owner’s authority' }) revocable!: boolean;
  @ApiProperty({ enum: REVIEW_DECISIONS, nullable: true }) decision!: ReviewDecision | null;
  @ApiProperty({ type: String, nullable: true }) note!: string | null;
  @ApiProperty({ type: Number, nullable: true }) reviewer_id!: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) decided_at!: string | null;
}

export class ReviewDecisionItemDto {
  @ApiProperty({ minimum: 1 }) @IsId() item_id!: number;
  @ApiProperty({ enum: REVIEW_DECISIONS }) @IsIn(REVIEW_DECISIONS) decision!: ReviewDecision;
  @ApiPropertyOptional({ maxLength: 500 })
  @Present()
  @IsString()
  @MaxLength(500)
  note?: string;
}

export class ReviewDecisionsDto {
  @ApiProperty({ type: [ReviewDecisionItemDto], minItems: 1, maxItems: 1000 })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @EachItem(ReviewDecisionItemDto)
  items!: ReviewDecisionItemDto[];
}

export class ReviewDecisionErrorDto {
  @ApiProperty() code!: string;
  @ApiProperty() message!: string;
}

export class ReviewDecisionResultDto {
  @ApiProperty() index!: number;
  @ApiProperty() item_id!: number;
  @ApiProperty({ enum: ['decided', 'failed'] }) status!: 'decided' | 'failed';
  @ApiProperty({ enum: REVIEW_DECISIONS }) decision!: ReviewDecision;
  @ApiProperty({ type: ReviewDecisionErrorDto, nullable: true }) error!: ReviewDecisionErrorDto | null;
}

export class ReviewDecisionsResponseDto {
  @ApiProperty({ description: 'Items received' }) accepted!: number;
  @ApiProperty({ description: 'Items decided' }) processed!: number;
  @ApiProperty({ description: 'Items that failed' }) failed!: number;
  @ApiProperty({ type: [ReviewDecisionResultDto] }) results!: ReviewDecisionResultDto[];
}
