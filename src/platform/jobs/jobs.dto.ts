import { ApiProperty } from '@nestjs/swagger';

/** A background job (part 6.10). */
export class JobDto {
  @ApiProperty({ format: 'uuid' }) job_id!: string;
  @ApiProperty({ example: 'send-push' }) type!: string;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The user who started the job; null for a system job',
  })
  created_by!: number | null;
  @ApiProperty({ enum: ['queued', 'running', 'succeeded', 'failed'] }) state!:
    'queued' | 'running' | 'succeeded' | 'failed';
  @ApiProperty({ description: 'Attempts started so far' }) attempts!: number;
  @ApiProperty({ type: String, format: 'date-time' }) created_at!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) started_at!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finished_at!: string | null;
  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: 'send-push: {message_id, devices, sent, failed, deactivated}',
  })
  result!: object | null;
  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: '{message} of the last failure when the job failed',
  })
  error!: { message: string } | null;
}

export class AcceptedJobDto {
  @ApiProperty({ format: 'uuid' }) job_id!: string;
  @ApiProperty({ enum: ['queued'] }) state!: 'queued';
}

/** One item's result in a bulk job: the bulk route's own per-item result (`index` is the item's place). */
export class JobResultDto {
  @ApiProperty({ description: "The item's place in the request's `items`, from 0" }) index!: number;
  @ApiProperty({
    description:
      'granted, already_granted, revoked, not_granted, deleted, already_deleted or failed, as the bulk route answers',
  })
  status!: string;
  @ApiProperty({ type: Object, nullable: true, description: '`{code, message}` for a failed item' })
  error!: { code: string; message: string } | null;
}
