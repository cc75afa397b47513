import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsDateString, IsOptional, Matches, ValidateIf } from 'class-validator';
import { Length } from '../platform/http/text-length.js';

/** One recipient's state of one message (part 6.8). */
export class ReadStateDto {
  @ApiProperty() id!: number;
  @ApiProperty() message_id!: number;
  @ApiProperty() user_id!: number;
  @ApiProperty({ type: String, nullable: true }) conversation_id!: string | null;
  @ApiProperty() is_read!: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) read_at!: string | null;
  @ApiProperty() is_archived!: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) archived_at!: string | null;
  @ApiProperty() is_pinned!: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) pinned_at!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) snoozed_until!: string | null;
  @ApiProperty({ description: 'snoozed_until is in the future (judged at read time)' }) is_snoozed!: boolean;
  @ApiProperty({ type: String, format: 'date-time' }) updated_at!: string;
  @ApiProperty({ type: Number, nullable: true }) updated_by!: number | null;
}

export class ReadCountsDto {
  @ApiProperty() user_id!: number;
  @ApiProperty({ type: String, nullable: true }) conversation_id!: string | null;
  @ApiProperty() total!: number;
  @ApiProperty() unread!: number;
  @ApiProperty() archived!: number;
  @ApiProperty() pinned!: number;
  @ApiProperty() snoozed!: number;
}

export class ReadCountsQueryDto {
  @ApiProperty({ example: '42' })
  @Matches(/^[1-9]\d{0,15}$/, { message: 'user_id must be a positive integer' })
  user_id!: string;
  @ApiPropertyOptional({ maxLength: 64 }) @IsOptional() @Length(1, 64) conversation_id?: string;
}

export class MarkReadDto {
  @ApiPropertyOptional({ default: true, description: 'false marks it unread' })
  @IsOptional()
  @IsBoolean()
  read?: boolean;
}

export class ArchiveDto {
  @ApiPropertyOptional({ default: true, description: 'false un-archives' })
  @IsOptional()
  @IsBoolean()
  archived?: boolean;
}

export class PinDto {
  @ApiPropertyOptional({ default: true, description: 'false unpins' }) @IsOptional() @IsBoolean() pinned?: boolean;
}

export class SnoozeDto {
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'A future time at most 365 days ahead, or null to unsnooze',
  })
  @ValidateIf((_object: object, value: unknown) => value !== null)
  @IsDateString({ strict: true }, { message: 'until must be an ISO-8601 timestamp or null' })
  until!: string | null;
}
