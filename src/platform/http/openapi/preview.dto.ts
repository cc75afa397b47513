import { ApiProperty } from '@nestjs/swagger';
import { DECIDED_BY } from '../../auth/decision.js';

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
    enum: DECIDED_BY,
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
