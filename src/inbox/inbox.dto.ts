import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  ValidateIf,
} from 'class-validator';
import { Length, MaxLength } from '../platform/http/text-length.js';
import { EachItem } from '../platform/http/bulk-items.js';
import { IsId } from '../platform/http/id.validators.js';
import { MaxJsonSize } from '../platform/http/max-json-size.validator.js';
import { SoftDeletableDto } from '../platform/http/openapi/audit-fields.dto.js';

const TYPE = /^[a-z][a-z0-9_]{0,31}$/;
const NOT_BLANK = /\S/;

/** An in-app inbox message (part 6.7). */
export class InboxMessageDto extends SoftDeletableDto {
  @ApiProperty() id!: number;
  @ApiProperty({ description: 'The recipient' }) user_id!: number;
  @ApiProperty({ type: String, nullable: true, maxLength: 64 }) conversation_id!: string | null;
  @ApiProperty({ example: 'shift_change', pattern: '^[a-z][a-z0-9_]{0,31}$' }) type!: string;
  @ApiProperty({ minLength: 1, maxLength: 200 }) title!: string;
  @ApiProperty({ maxLength: 10000 }) body!: string;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true, description: 'At most 16 KiB as JSON' })
  data!: Record<string, unknown> | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_pushed_at!: string | null;
}

export class CreateMessageDto {
  @ApiProperty({ minimum: 1 }) @IsId() user_id!: number;
  @ApiProperty({ pattern: '^[a-z][a-z0-9_]{0,31}$' })
  @IsString()
  @Matches(TYPE, { message: 'type must match ^[a-z][a-z0-9_]{0,31}$' })
  type!: string;
  @ApiProperty({ minLength: 1, maxLength: 200 })
  @IsString()
  @Length(1, 200)
  @Matches(NOT_BLANK, { message: 'title must not be blank' })
  title!: string;
  @ApiProperty({ maxLength: 10000 }) @IsString() @MaxLength(10_000) body!: string;
  @ApiPropertyOptional({ maxLength: 64 }) @IsOptional() @IsString() @Length(1, 64) conversation_id?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'At most 16 KiB as JSON' })
  @IsOptional()
  @IsObject()
  @MaxJsonSize(16 * 1024)
  data?: Record<string, unknown>;
}

export class UpdateMessageDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 200 })
  @ValidateIf((_object: object, value: unknown) => value !== undefined)
  @IsString()
  @Length(1, 200)
  @Matches(NOT_BLANK, { message: 'title must not be blank' })
  title?: string;

  @ApiPropertyOptional({ maxLength: 10000 })
  @ValidateIf((_object: object, value: unknown) => value !== undefined)
  @IsString()
  @MaxLength(10_000)
  body?: string;

  @ApiPropertyOptional({ type: 'object', nullable: true, additionalProperties: true, description: 'null removes it' })
  @IsOptional()
  @IsObject()
  @MaxJsonSize(16 * 1024)
  data?: Record<string, unknown> | null;
}

export class SendPushDto {
  @ApiPropertyOptional({ maxLength: 200, description: 'Defaults to the message title' })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  title?: string;
  @ApiPropertyOptional({ maxLength: 1000, description: 'Defaults to the message body (shortened)' })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  body?: string;
}

export class BulkDeleteItemDto {
  @ApiProperty({ minimum: 1 }) @IsId() id!: number;
}

export class BulkDeleteDto {
  @ApiProperty({
    type: [BulkDeleteItemDto],
    minItems: 1,
    maxItems: 100_000,
    description: 'At most 1000 items, or 100 000 with `Prefer: respond-async`',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100_000)
  @EachItem(BulkDeleteItemDto)
  items!: BulkDeleteItemDto[];

  @ApiPropertyOptional({ maxLength: 500 }) @IsOptional() @IsString() @MaxLength(500) reason?: string;
  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean() dry_run?: boolean;
}

export class BulkDeleteResultDto {
  @ApiProperty() index!: number;
  @ApiProperty() id!: number;
  @ApiProperty({ enum: ['deleted', 'already_deleted', 'failed'] }) status!: 'deleted' | 'already_deleted' | 'failed';
  @ApiProperty({
    type: 'object',
    nullable: true,
    properties: { code: { type: 'string' }, message: { type: 'string' } },
  })
  error!: { code: string; message: string } | null;
}

export class BulkDeleteResponseDto {
  @ApiProperty() accepted!: number;
  @ApiProperty() processed!: number;
  @ApiProperty() failed!: number;
  @ApiProperty({ type: [BulkDeleteResultDto] }) results!: BulkDeleteResultDto[];
}
