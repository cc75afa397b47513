import { ApiProperty } from '@nestjs/swagger';

/** `resource_id` as the audit trail and the event feed show it: a number, or a string for session ids. */
export const ApiResourceId = (): PropertyDecorator =>
  ApiProperty({
    oneOf: [{ type: 'integer' }, { type: 'string' }],
    nullable: true,
    example: 42,
    description: 'A number, or a string for session ids',
  });

/** One append-only record of a successful write (part 6.10). */
export class AuditEventDto {
  @ApiProperty({ example: 1042 }) id!: number;
  @ApiProperty({ type: String, format: 'date-time' }) occurred_at!: string;
  @ApiProperty({ type: Number, nullable: true, description: 'The acting user; null for a system flow' }) actor_id!:
    number | null;
  @ApiProperty({ example: 'authority.revoke', description: '`<resource_type>.<verb>`' }) action!: string;
  @ApiProperty({ example: 'authority' }) resource_type!: string;
  @ApiResourceId()
  resource_id!: number | string | null;
  @ApiProperty({ type: String, nullable: true }) request_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) reason!: string | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'array', minItems: 2, maxItems: 2, items: { nullable: true } },
    example: { is_active: [true, false] },
    description: 'Each changed field as `[before, after]` (secrets left out)',
  })
  changes!: Record<string, [unknown, unknown]>;
}
