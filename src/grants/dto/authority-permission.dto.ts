import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsOptional, IsString } from 'class-validator';
import { MaxLength } from '../../platform/http/text-length.js';
import { EachItem } from '../../platform/http/bulk-items.js';
import { IsCatalogueId, IsId } from '../../platform/http/id.validators.js';

/** An action permission attached to one authority (part 6.6). */
export class AuthorityPermissionDto {
  @ApiProperty() id!: number;
  @ApiProperty() authority_id!: number;
  @ApiProperty({ description: 'The authority’s device' }) device_id!: number;
  @ApiProperty() permission_id!: number;
  @ApiProperty({ example: 'authorities.revoke' }) permission_code!: string;
  @ApiProperty({ type: Number, nullable: true }) granted_by!: number | null;
  @ApiProperty({ type: String, format: 'date-time' }) granted_at!: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When it stops allowing anything (set by an access-request approval); null: never',
  })
  expires_at!: string | null;
  @ApiProperty({ type: Number, nullable: true }) revoked_by!: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revoked_at!: string | null;
  @ApiProperty({ description: 'Not revoked and not expired (judged at read time)' }) is_active!: boolean;
}

export class CreateAuthorityPermissionDto {
  @ApiProperty({ minimum: 1 }) @IsId() authority_id!: number;
  @ApiProperty({ minimum: 1, description: 'A device-scoped permission' }) @IsCatalogueId() permission_id!: number;
}

export class BulkItemDto {
  @ApiProperty({ minimum: 1 }) @IsId() authority_id!: number;
  @ApiProperty({ minimum: 1 }) @IsCatalogueId() permission_id!: number;
}

export class BulkAuthorityPermissionsDto {
  @ApiProperty({
    type: [BulkItemDto],
    minItems: 1,
    maxItems: 100_000,
    description: 'At most 1000 items, or 100 000 with `Prefer: respond-async`',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100_000)
  @EachItem(BulkItemDto)
  items!: BulkItemDto[];

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;

  @ApiPropertyOptional({ default: false, description: 'Compute the same response and write nothing' })
  @IsOptional()
  @IsBoolean()
  dry_run?: boolean;
}

export class BulkErrorDto {
  @ApiProperty() code!: string;
  @ApiProperty() message!: string;
}

export class BulkResultDto {
  @ApiProperty() index!: number;
  @ApiProperty() authority_id!: number;
  @ApiProperty() permission_id!: number;
  @ApiProperty({ enum: ['granted', 'already_granted', 'revoked', 'not_granted', 'failed'] }) status!: string;
  @ApiProperty({ type: Number, nullable: true }) authority_permission_id!: number | null;
  @ApiProperty({ type: BulkErrorDto, nullable: true }) error!: BulkErrorDto | null;
}

export class BulkResponseDto {
  @ApiProperty({ description: 'Items received' }) accepted!: number;
  @ApiProperty({ description: 'Items that did not fail' }) processed!: number;
  @ApiProperty({ description: 'Items that failed' }) failed!: number;
  @ApiProperty({ type: [BulkResultDto] }) results!: BulkResultDto[];
}
