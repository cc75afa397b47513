import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches } from 'class-validator';
import { MaxLength } from '../../platform/http/text-length.js';
import { AccessPageQueryDto, SortParam } from './access.dto.js';

/** One gain or loss of a right on a device. */
export class AccessTimelineEntryDto {
  @ApiProperty({ type: String, format: 'date-time' }) occurred_at!: string;
  @ApiProperty() user_id!: number;
  @ApiProperty({ enum: ['gained', 'lost'] }) change!: string;
  @ApiProperty({
    example: 'revoked',
    description:
      'What made the change: `history_started` (the state when the history began), `authority_created`, `ownership_transferred`, `revoked`, `unrevoked`, `activated`, `deactivated`, `authority_deleted`, `authority_restored`, `expiry_changed`, `expired`, `permission_granted`, `permission_revoked`, `user_created`, `user_status_changed`, `role_changed`, `user_deleted`, `user_restored`, `group_member_added`, `group_member_removed`, `group_created`, `group_deleted`, `group_restored`, `group_role_changed`',
  })
  cause!: string;
  @ApiProperty({ example: 'authorities.revoke' }) permission_code!: string;
  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      'The group the right came or went through: the group holding the authority, else the group whose membership or role changed; null for a user’s own way',
  })
  group_id!: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Who made the change (null for an expiry or a system flow)',
  })
  actor_id!: number | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The feed event of the change (`GET /events`), null for an expiry or when it has been purged',
  })
  event_id!: string | null;
}

export class AccessTimelineQueryDto extends AccessPageQueryDto {
  @SortParam('occurred_at', 'desc') sort?: string;

  @ApiPropertyOptional({ example: '42', description: 'Only this user’s changes' })
  @IsOptional()
  @Matches(/^[1-9]\d{0,15}$/, { message: 'user_id must be a positive integer' })
  user_id?: string;

  @ApiPropertyOptional({ example: 'devices.transfer_owner', description: 'Only changes of this permission' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  permission?: string;
}
