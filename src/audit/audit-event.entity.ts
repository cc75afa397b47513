import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One append-only record of a successful write (part 6.10). The database refuses UPDATE and DELETE. */
@Entity({ name: 'audit_events' })
export class AuditEvent {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  id!: number;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  occurred_at!: Date;

  @Column({ type: 'bigint', nullable: true })
  actor_id!: number | null;

  @Column({ type: 'text' })
  action!: string;

  @Column({ type: 'text' })
  resource_type!: string;

  @Column({ type: 'text', nullable: true })
  resource_id!: string | null;

  @Column({ type: 'text', nullable: true })
  request_id!: string | null;

  @Column({ type: 'text', nullable: true })
  reason!: string | null;

  @Column({ type: 'jsonb', default: () => "'{}'::jsonb" })
  changes!: Record<string, [unknown, unknown]>;
}
