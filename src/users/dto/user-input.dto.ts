import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsEmail, IsOptional, IsString, Matches } from 'class-validator';
import { Length, MaxLength } from '../../platform/http/text-length.js';
import { IsCatalogueId } from '../../platform/http/id.validators.js';
import { Present } from '../../platform/http/validation.js';

const E164 = /^\+[1-9]\d{1,14}$/;
const NOT_BLANK = /\S/;

export class CreateUserDto {
  @ApiProperty({
    maxLength: 254,
    example: 'ana@example.com',
    description: 'Unique, case-insensitive; deleted users keep theirs',
  })
  @IsEmail({ require_tld: true }, { message: 'email must be an email address' })
  @MaxLength(254)
  email!: string;

  @ApiProperty({ minLength: 1, maxLength: 100, example: 'Ana Silva' })
  @IsString()
  @Length(1, 100)
  @Matches(NOT_BLANK, { message: 'display_name must not be blank' })
  display_name!: string;

  @ApiProperty({ minimum: 1, example: 3, description: 'Giving super_admin (1) or admin (2) requires super_admin' })
  @IsCatalogueId()
  role_id!: number;

  @ApiPropertyOptional({ example: '+351912345678', description: 'E.164' })
  @IsOptional()
  @Matches(E164, { message: 'phone must be an E.164 number such as +351912345678' })
  phone?: string;
}

export class UpdateUserDto {
  @ApiPropertyOptional({ maxLength: 254 })
  @Present()
  @IsEmail({ require_tld: true }, { message: 'email must be an email address' })
  @MaxLength(254)
  email?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 100 })
  @Present()
  @IsString()
  @Length(1, 100)
  @Matches(NOT_BLANK, { message: 'display_name must not be blank' })
  display_name?: string;

  @ApiPropertyOptional({ type: String, nullable: true, description: 'E.164; null removes it' })
  @IsOptional()
  @Matches(E164, { message: 'phone must be an E.164 number such as +351912345678' })
  phone?: string | null;

  @ApiPropertyOptional({ minimum: 1 })
  @Present()
  @IsCatalogueId()
  role_id?: number;
}

export class SuspendUserDto {
  @ApiPropertyOptional({ maxLength: 500, description: 'Recorded in the audit event' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}
