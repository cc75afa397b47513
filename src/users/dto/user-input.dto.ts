import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsEmail, IsOptional, IsString, Matches } from 'class-validator';
import { Length, MaxLength } from '../../platform/http/text-length.js';
import { IsCatalogueId } from '../../platform/http/id.validators.js';
import { Present } from '../../platform/http/validation.js';

const E164 = /^\+[1-9]\d{1,14}$/;
const NOT_BLANK = /\S/;
/** No control characters, no space at either end (an identity provider's names are compared exactly). */
const PRINTABLE = /^(?!\s)[^\p{Cc}]*(?<!\s)$/u;
const USER_NAME = 'SCIM `userName` (part 6.19): unique, compared case-insensitively';
const EXTERNAL_ID = 'The identity provider’s id for the user: unique';

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

  @ApiPropertyOptional({ minLength: 1, maxLength: 254, example: 'ana.silva', description: USER_NAME })
  @IsOptional()
  @IsString()
  @Length(1, 254)
  @Matches(PRINTABLE, { message: 'user_name must be printable text with no spaces at its ends' })
  user_name?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 255, example: '00u1abcd', description: EXTERNAL_ID })
  @IsOptional()
  @IsString()
  @Length(1, 255)
  @Matches(PRINTABLE, { message: 'external_id must be printable text with no spaces at its ends' })
  external_id?: string;
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

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    minLength: 1,
    maxLength: 254,
    description: `${USER_NAME}; null removes it`,
  })
  @IsOptional()
  @IsString()
  @Length(1, 254)
  @Matches(PRINTABLE, { message: 'user_name must be printable text with no spaces at its ends' })
  user_name?: string | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    minLength: 1,
    maxLength: 255,
    description: `${EXTERNAL_ID}; null removes it`,
  })
  @IsOptional()
  @IsString()
  @Length(1, 255)
  @Matches(PRINTABLE, { message: 'external_id must be printable text with no spaces at its ends' })
  external_id?: string | null;
}

export class SuspendUserDto {
  @ApiPropertyOptional({ maxLength: 500, description: 'Recorded in the audit event' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}
