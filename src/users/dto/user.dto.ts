import { ApiProperty } from '@nestjs/swagger';
import { SoftDeletableDto } from '../../platform/http/openapi/audit-fields.dto.js';

/** A user as every users route returns it (part 6.1). */
export class UserDto extends SoftDeletableDto {
  @ApiProperty({ example: 42 }) id!: number;
  @ApiProperty({ example: 'ana@example.com', maxLength: 254 }) email!: string;
  @ApiProperty({ example: 'Ana Silva', minLength: 1, maxLength: 100 }) display_name!: string;
  @ApiProperty({ type: String, nullable: true, example: '+351912345678', description: 'E.164' }) phone!: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    example: 'ana.silva',
    description: 'SCIM `userName` (part 6.19): unique, case-insensitive; SCIM shows the email when it is null',
  })
  user_name!: string | null;
  @ApiProperty({ type: String, nullable: true, example: '00u1abcd', description: 'The identity provider’s id; unique' })
  external_id!: string | null;
  @ApiProperty({ example: 3, description: '1 super_admin, 2 admin, 3 operator, 4 viewer, 5 member' }) role_id!: number;
  @ApiProperty({
    example: 3,
    description: 'The highest ranked of `role_id` and the roles of the groups the user belongs to (part 6.18)',
  })
  effective_role_id!: number;
  @ApiProperty({ example: 2, description: '1 pending, 2 active, 3 suspended' }) status_id!: number;
  @ApiProperty({ description: 'Whether a PIN hash is stored (the PIN itself is never returned)' }) pin_set!: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) pin_reset_at!: string | null;
}

export class PinResetDto {
  @ApiProperty({ example: 42 }) user_id!: number;
  @ApiProperty({
    example: '042917',
    pattern: '^\\d{6}$',
    description: 'Shown in this response only; only its hash is stored',
  })
  temporary_pin!: string;
  @ApiProperty({ type: String, format: 'date-time' }) pin_reset_at!: string;
}
