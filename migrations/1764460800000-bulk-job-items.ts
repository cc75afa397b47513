import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The items of a bulk job, in chunks of 1000, beside the job instead of in its queue payload: a
 * 100 000-item payload made every poll of `GET /jobs/{job_id}` read megabytes, and the worker held
 * them all in memory. A chunk is deleted in the transaction that does its work.
 */
export class BulkJobItems1764460800000 implements MigrationInterface {
  name = 'BulkJobItems1764460800000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE TABLE bulk_job_items (
      job_id uuid NOT NULL,
      chunk_offset integer NOT NULL,
      items jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (job_id, chunk_offset)
    )`);
    await db.query('CREATE INDEX bulk_job_items_created_at_idx ON bulk_job_items (created_at)');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE bulk_job_items');
  }
}
