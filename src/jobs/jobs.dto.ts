import { ApiProperty } from '@nestjs/swagger';

/** A background job (part 6.10). */
export class JobDto {
  @ApiProperty({ format: 'uuid' }) job_id!: string;
  @ApiProperty({ example: 'send-push' }) type!: string;
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
