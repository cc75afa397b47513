import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-item results of bulk jobs (part 6.6: `Prefer: respond-async`), written chunk by chunk in the
 * transaction that did the chunk's work, so a job's results are never held in memory and a retried
 * job resumes after the last stored item. Purged with the jobs (kept 7 days after they finish).
 */
export class JobResults1764374400000 implements MigrationInterface {
  name = 'JobResults1764374400000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE TABLE job_results (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      job_id uuid NOT NULL,
      item_index integer NOT NULL,
      result jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (job_id, item_index)
    )`);
    await db.query('CREATE INDEX job_results_job_idx ON job_results (job_id, id)');
    await db.query('CREATE INDEX job_results_created_at_idx ON job_results (created_at)');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE job_results');
  }
}
