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
    enum: ['role', 'permission_grant', 'device_owner', 'authority_permission'],
    description: 'The way that allows it after the write (gained) or allowed it before (lost)',
  })
  decided_by!: string;
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
  @ApiProperty({ type: [AccessChangeDto], description: 'Every access the write would give or take (part 6.17)' })
  access_changes!: AccessChangeDto[];
}
