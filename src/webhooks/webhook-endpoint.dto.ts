import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsOptional, IsString, Matches } from 'class-validator';
import { Length, MaxLength } from '../platform/http/text-length.js';
import { EVENT_TYPE } from '../events/events.dto.js';
import { Present } from '../platform/http/validation.js';
import { AuditedDto } from '../platform/http/openapi/audit-fields.dto.js';

/** An event type (`authority.revoke`, `push.failed`, `webhook.test`), or `*` for every type. */
export const EVENT_TYPE_OR_ALL = new RegExp(`^(\\*|${EVENT_TYPE.source.slice(1, -1)})$`);

/** Where events are POSTed, signed (part 6.12); the secret is never shown again after it is made. */
export class WebhookEndpointDto extends AuditedDto {
  @ApiProperty() id!: number;
  @ApiProperty({ example: 'https://hooks.example.com/admin-api' }) url!: string;
  @ApiProperty({ type: String, nullable: true }) description!: string | null;
  @ApiProperty({ type: [String], example: ['authority.revoke', 'user.suspend'], description: '`["*"]`: every type' })
  event_types!: string[];
  @ApiProperty() is_active!: boolean;
  @ApiProperty({
    type: String,
    nullable: true,
    description: '`failing` when deliveries failed for 3 days and the endpoint was disabled',
  })
  disabled_reason!: string | null;
}

/** The endpoint with its signing secret: the answer of create and rotate-secret only. */
export class WebhookEndpointWithSecretDto extends WebhookEndpointDto {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'Shown in this response only: store it now',
  })
  secret!: string;
}

export class CreateWebhookEndpointDto {
  @ApiProperty({ maxLength: 2048, description: 'https (http only when WEBHOOK_ALLOW_HTTP=true); a public host' })
  @IsString()
  @Length(1, 2048)
  url!: string;

  @ApiPropertyOptional({ maxLength: 500 }) @IsOptional() @IsString() @MaxLength(500) description?: string;

  @ApiProperty({ type: [String], minItems: 1, maxItems: 100, example: ['*'] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @Matches(EVENT_TYPE_OR_ALL, { each: true, message: 'event_types must hold event types such as user.create, or "*"' })
  event_types!: string[];
}

export class UpdateWebhookEndpointDto {
  @ApiPropertyOptional({ maxLength: 2048 }) @Present() @IsString() @Length(1, 2048) url?: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 500, description: 'null removes it' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string | null;

  @ApiPropertyOptional({ type: [String], minItems: 1, maxItems: 100 })
  @Present()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @Matches(EVENT_TYPE_OR_ALL, { each: true, message: 'event_types must hold event types such as user.create, or "*"' })
  event_types?: string[];

  @ApiPropertyOptional({ description: 'true re-enables an endpoint disabled for failing' })
  @Present()
  @IsBoolean()
  is_active?: boolean;
}

/** One event's delivery to one endpoint: its state, attempts and schedule. */
export class WebhookDeliveryDto {
  @ApiProperty({ example: '1042' }) id!: string;
  @ApiProperty() endpoint_id!: number;
  @ApiProperty({ example: '00000000000000000812-00000000000000000042', description: 'Sent as `webhook-id`' })
  event_id!: string;
  @ApiProperty({ example: 'authority.revoke' }) event_type!: string;
  @ApiProperty({ enum: ['pending', 'succeeded', 'failed'] }) state!: string;
  @ApiProperty({ description: 'Also the delivery’s version: `If-Match` on retry names it (`"3"`)' })
  attempts!: number;
  @ApiProperty({ type: Number, nullable: true }) last_status!: number | null;
  @ApiProperty({ type: String, nullable: true }) last_error!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) next_attempt_at!: string | Date | null;
  @ApiProperty({ type: String, format: 'date-time' }) created_at!: string | Date;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) delivered_at!: string | Date | null;
}
