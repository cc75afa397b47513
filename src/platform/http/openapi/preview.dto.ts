import { ApiProperty } from '@nestjs/swagger';

export class AccessChangeDto {
  @ApiProperty() user_id!: number;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'null: everywhere (a role or a permission grant); else the device of the authority',
  })
  device_id!: number | null;
  @ApiProperty() permission_code!: string;
  @ApiProperty({ enum: ['gained', 'lost'] }) change!: 'gained' | 'lost';
  @ApiProperty({
    // The ways of part 5 (platform/auth's DECIDED_BY: http sits below auth, so they are named here).
    enum: [
      'role',
      'permission_grant',
      'group_permission_grant',
      'device_owner',
      'authority_permission',
      'group_authority_permission',
    ],
    description: 'The way that allows it after the write (gained) or allowed it before (lost)',
  })
  decided_by!: string;
  @ApiProperty({
    type: Number,
    required: false,
    description: 'The group the change comes through (absent when the user holds the way itself)',
  })
  group_id?: number;
}

export class AccessPreviewDto {
  @ApiProperty({ enum: [true] }) dry_run!: true;
  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: 'The `data` the write would answer (null where it would answer 204)',
  })
  outcome!: object | null;
  @ApiProperty({
    type: [AccessChangeDto],
    maxItems: 1000,
    description: 'The access the write would give or take (part 6.17): the first 1 000',
  })
  access_changes!: AccessChangeDto[];
  @ApiProperty({ description: 'How many changes the write would make in all (more than listed when over 1 000)' })
  access_changes_total!: number;
}
