import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional, IsString, Matches, ValidateIf } from 'class-validator';
import { Length, MaxLength } from '../../platform/http/text-length.js';
import { IsId } from '../../platform/http/id.validators.js';
import { AuthorityDto } from './authority.dto.js';
import { AuditedDto } from '../../platform/http/openapi/audit-fields.dto.js';

const NOT_BLANK = /\S/;

/** A controlled device (part 6.2). */
export class DeviceDto extends AuditedDto {
  @ApiProperty({ example: 7 }) id!: number;
  @ApiProperty({ example: 'SN-0001-AX', minLength: 1, maxLength: 64 }) serial_number!: string;
  @ApiProperty({ example: 'Front door lock', minLength: 1, maxLength: 100 }) name!: string;
  @ApiProperty({ type: String, nullable: true, example: 'X200' }) model!: string | null;
  @ApiProperty({ type: Number, nullable: true, description: 'The current owner; set only by transfer-owner' })
  owner_user_id!: number | null;
}

export class CreateDeviceDto {
  @ApiProperty({ minLength: 1, maxLength: 64, description: 'Unique' })
  @IsString()
  @Length(1, 64)
  @Matches(NOT_BLANK, { message: 'serial_number must not be blank' })
  serial_number!: string;

  @ApiProperty({ minLength: 1, maxLength: 100 })
  @IsString()
  @Length(1, 100)
  @Matches(NOT_BLANK, { message: 'name must not be blank' })
  name!: string;

  @ApiPropertyOptional({ maxLength: 100 })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  model?: string;
}

export class UpdateDeviceDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 100 })
  @ValidateIf((_object: object, value: unknown) => value !== undefined)
  @IsString()
  @Length(1, 100)
  @Matches(NOT_BLANK, { message: 'name must not be blank' })
  name?: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 100, description: 'null removes it' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  model?: string | null;
}

export class TransferOwnerDto {
  @ApiProperty({ minimum: 1, description: 'An active, non-deleted user other than the current owner' })
  @IsId()
  new_owner_user_id!: number;

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;

  @ApiPropertyOptional({ default: true, description: 'false also revokes the previous owner’s authority' })
  @IsOptional()
  @IsBoolean()
  keep_previous_owner_access?: boolean;
}

export class TransferResultDto {
  @ApiProperty() device_id!: number;
  @ApiProperty({ type: AuthorityDto, nullable: true, description: 'null on the first assignment' })
  previous_owner!: AuthorityDto | null;
  @ApiProperty({ type: AuthorityDto }) new_owner!: AuthorityDto;
}

export class OwnershipTransferDto {
  @ApiProperty() id!: number;
  @ApiProperty() device_id!: number;
  @ApiProperty({ type: Number, nullable: true }) from_user_id!: number | null;
  @ApiProperty() to_user_id!: number;
  @ApiProperty({ type: String, nullable: true }) reason!: string | null;
  @ApiProperty({ type: Number, nullable: true }) transferred_by!: number | null;
  @ApiProperty({ type: String, format: 'date-time' }) transferred_at!: string;
  @ApiProperty({ type: String, nullable: true }) request_id!: string | null;
}
