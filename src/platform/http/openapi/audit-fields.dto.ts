import { ApiProperty } from '@nestjs/swagger';

/** The audit fields every mutable record carries (part 1), documented once. */
export abstract class AuditedDto {
  @ApiProperty({ type: String, format: 'date-time' }) created_at!: string;
  @ApiProperty({ type: String, format: 'date-time' }) updated_at!: string;
  @ApiProperty({ type: Number, nullable: true }) created_by!: number | null;
  @ApiProperty({ type: Number, nullable: true }) updated_by!: number | null;
}

/** Audit fields plus the soft-delete ones (part 3). */
export abstract class SoftDeletableDto extends AuditedDto {
  @ApiProperty() is_deleted!: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) deleted_at!: string | null;
  @ApiProperty({ type: Number, nullable: true }) deleted_by!: number | null;
}
