import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Stored first responses of POSTs sent with an Idempotency-Key (part 8). */
export class IdempotencyKeys1764028800000 implements MigrationInterface {
  name = 'IdempotencyKeys1764028800000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE idempotency_keys (
        actor_id bigint NOT NULL,
        method text NOT NULL,
        path text NOT NULL,
        key text NOT NULL,
        fingerprint text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        -- NULL while the first request is still running.
        completed_at timestamptz NULL,
        status integer NULL,
        headers jsonb NULL,
        body text NULL,
        PRIMARY KEY (actor_id, method, path, key)
      )`);
    await db.query('CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at)');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE idempotency_keys');
  }
}
