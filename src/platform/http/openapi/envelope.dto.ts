import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ERROR_CODES } from '../error-codes.js';

export class FeedMetaDto {
  @ApiProperty({ description: 'Echo of X-Request-Id, or the id generated for this request' })
  request_id!: string;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The cursor for the next call (`after=`): the last event returned, or the one given',
  })
  next_after!: string | null;
}

export class MetaDto {
  @ApiProperty({ description: 'Echo of X-Request-Id, or the id generated for this request' })
  request_id!: string;

  @ApiPropertyOptional({
    enum: ['hit', 'miss', 'bypass'],
    description: 'Present when the data went through the cache layer',
  })
  cache?: 'hit' | 'miss' | 'bypass';
}

export class ListMetaDto extends MetaDto {
  @ApiProperty({ minimum: 1 }) page!: number;
  @ApiProperty({ minimum: 1, maximum: 100 }) page_size!: number;
  @ApiProperty({
    minimum: 0,
    description: 'Matching records; exact up to 10 000, possibly estimated beyond (see total_exact)',
  })
  total!: number;
  @ApiProperty() total_exact!: boolean;
}

export class FieldProblemDto {
  @ApiProperty({ example: 'page_size' }) field!: string;
  @ApiProperty({ example: 'max' }) rule!: string;
  @ApiProperty({ example: 'page_size must not be greater than 100' }) message!: string;
}

export class ErrorDto {
  @ApiProperty({ enum: ERROR_CODES }) code!: string;
  @ApiProperty() message!: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'Always an object; validation errors list `fields`',
  })
  details!: Record<string, unknown>;
}

export class ErrorEnvelopeDto {
  @ApiProperty({ enum: [false] }) success!: false;
  @ApiProperty({ type: ErrorDto }) error!: ErrorDto;
  @ApiProperty({ type: MetaDto }) meta!: MetaDto;
}
