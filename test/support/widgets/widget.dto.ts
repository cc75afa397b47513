import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { Length } from '../../../src/platform/http/text-length.js';

export const CATEGORIES = ['tool', 'toy', 'part'] as const;

export class CreateWidgetDto {
  @IsString() @Length(1, 100) name!: string;
  @IsIn(CATEGORIES) category!: string;
  @IsOptional() @IsInt() @Min(0) @Max(1000) weight?: number;
}

export class UpdateWidgetDto {
  @IsOptional() @IsString() @Length(1, 100) name?: string;
  @IsOptional() @IsInt() @Min(0) @Max(1000) weight?: number;
  @IsOptional() @IsBoolean() active?: boolean;
}
