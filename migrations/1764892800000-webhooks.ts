import type { MigrationInterface, QueryRunner } from 'typeorm';
import { BASE_RECORD_COLUMNS_V1 as BASE_RECORD_COLUMNS } from './record-columns-v1.js';

/**
 * Webhooks (part 6.12): endpoints with their signing secrets, one delivery row per event and
 * endpoint (the delivery log and the retry schedule at once), and the fan-out's cursor on the
 * event feed, advanced in the same transaction that creates the deliveries, so every event
 * reaches every subscribed endpoint exactly once whichever instance fans it out.
 */
export class Webhooks1764892800000 implements MigrationInterface {
  name = 'Webhooks1764892800000';

  async up(db: QueryRunner): Promise<void> {
    // The last feed position handed out: an endpoint hears of events committed after it was made.
    await db.query(`CREATE FUNCTION events_feed_end() RETURNS bigint LANGUAGE sql STABLE AS
      $$ SELECT last_value FROM events_commit_seq $$`);
    await db.query(`
      CREATE TABLE webhook_endpoints (${BASE_RECORD_COLUMNS},
        url text NOT NULL CHECK (length(url) <= 2048),
        description text NULL CHECK (length(description) <= 500),
        event_types text[] NOT NULL CHECK (cardinality(event_types) BETWEEN 1 AND 100),
        is_active boolean NOT NULL DEFAULT true,
        disabled_reason text NULL,
        secret text NOT NULL,
        previous_secret text NULL,
        previous_secret_until timestamptz NULL,
        feed_from bigint NOT NULL DEFAULT events_feed_end()
      )`);
    await db.query('CREATE INDEX webhook_endpoints_created_idx ON webhook_endpoints (created_at, id)');
    await db.query(
      'CREATE TRIGGER webhook_endpoints_version BEFORE UPDATE ON webhook_endpoints FOR EACH ROW EXECUTE FUNCTION bump_row_version()',
    );
    // An endpoint whose deliveries fail, since when (a row only while it fails). Kept apart so
    // that a delivery's outcome never changes the endpoint's version (its ETag).
    // While it fails, its new deliveries wait for the next probe (one delivery at a time), so a
    // dead endpoint does not keep a worker busy with timeouts.
    await db.query(`CREATE TABLE webhook_endpoint_failures (
        endpoint_id bigint PRIMARY KEY REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        failing_since timestamptz NOT NULL DEFAULT now(),
        failed_rounds integer NOT NULL DEFAULT 0,
        next_probe_at timestamptz NOT NULL DEFAULT now()
      )`);
    // The endpoint whose deliveries a run is sending, until when: one run per endpoint at a time.
    await db.query(`CREATE TABLE webhook_runs (
        endpoint_id bigint PRIMARY KEY,
        holder uuid NOT NULL,
        until timestamptz NOT NULL
      )`);
    // No foreign key: an endpoint is deleted for good, its deliveries stay readable 30 days.
    await db.query(`
      CREATE TABLE webhook_deliveries (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        endpoint_id bigint NOT NULL,
        event_id text NOT NULL,
        event_type text NOT NULL,
        payload jsonb NOT NULL,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'succeeded', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        last_status integer NULL,
        last_error text NULL,
        next_attempt_at timestamptz NULL DEFAULT now(),
        retry_until timestamptz NOT NULL DEFAULT now() + interval '3 days',
        created_at timestamptz NOT NULL DEFAULT now(),
        delivered_at timestamptz NULL,
        claim uuid NULL,
        UNIQUE (endpoint_id, event_id)
      )`);
    await db.query('CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id)');
    await db.query(
      "CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending'",
    );
    await db.query(
      "CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending'",
    );
    await db.query('CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (created_at)');
    // Starts at the feed's end: endpoints hear of what happens after they exist.
    await db.query(`CREATE TABLE webhook_fanout (
        id integer PRIMARY KEY CHECK (id = 1),
        after text NOT NULL
      )`);
    await db.query(`INSERT INTO webhook_fanout (id, after)
      SELECT 1, lpad(COALESCE(max(seq), 0)::text, 20, '0') || '-' || lpad('9223372036854775807', 20, '0') FROM events`);
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of [
      'webhook_fanout',
      'webhook_runs',
      'webhook_deliveries',
      'webhook_endpoint_failures',
      'webhook_endpoints',
    ])
      await db.query(`DROP TABLE ${table}`);
    await db.query('DROP FUNCTION events_feed_end()');
  }
}
