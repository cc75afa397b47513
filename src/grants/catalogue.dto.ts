import { ApiProperty } from '@nestjs/swagger';

export class PermissionDto {
  @ApiProperty({ example: 13 }) id!: number;
  @ApiProperty({ example: 'authorities.read' }) code!: string;
  @ApiProperty({ description: 'Also granted through an authority on the device (layer 3c)' }) device_scoped!: boolean;
}

export class RoleDto {
  @ApiProperty({ example: 3 }) id!: number;
  @ApiProperty({ enum: ['super_admin', 'admin', 'operator', 'viewer', 'member'] }) code!: string;
  @ApiProperty({ description: 'Whether the role may call the admin API at all' }) admin_access!: boolean;
  @ApiProperty({ type: [String], description: 'Permission codes the role grants' }) permissions!: string[];
}
