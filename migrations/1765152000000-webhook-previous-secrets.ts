import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every secret an endpoint rotated away less than 24 hours ago keeps signing (part 6.12), not only
 * the last one: two rotations in a row used to drop the first old secret at once, and a receiver
 * still holding it stopped verifying. The secrets rotated away go to a table of their own, one row
 * each with its rotation time.
 *
 * A change of `webhook_endpoints.secret` is a rotation, whoever makes it: a trigger keeps the
 * secret it replaces (and forgets the endpoint's ones past the overlap). The previous release
 * reads only `previous_secret` and `previous_secret_until`, so the trigger keeps those filled with
 * the last old secret until a later release drops them: instances of both versions sign alike
 * enough during a rolling upgrade. The overlap is one SQL function, read by the trigger and by the
 * service's signing query, so the two cannot disagree.
 */
export class WebhookPreviousSecrets1765152000000 implements MigrationInterface {
  name = 'WebhookPreviousSecrets1765152000000';

  /** Tables this migration's trigger writes (on a rotation, and by cascade on a delete). */
  static readonly triggerWritten = ['webhook_previous_secrets'];

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE FUNCTION webhook_secret_overlap() RETURNS interval LANGUAGE sql IMMUTABLE AS
      $$ SELECT interval '24 hours' $$`);
    await db.query(`CREATE TABLE webhook_previous_secrets (
        endpoint_id bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        secret text NOT NULL,
        rotated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (endpoint_id, secret)
      )`);
    await db.query('CREATE INDEX webhook_previous_secrets_rotated_idx ON webhook_previous_secrets (rotated_at)');
    await db.query(`INSERT INTO webhook_previous_secrets (endpoint_id, secret, rotated_at)
      SELECT id, previous_secret, previous_secret_until - webhook_secret_overlap() FROM webhook_endpoints
      WHERE previous_secret IS NOT NULL AND previous_secret_until > now()`);
    await db.query(`CREATE FUNCTION webhook_endpoints_keep_previous_secret() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM webhook_previous_secrets
          WHERE endpoint_id = OLD.id AND rotated_at <= now() - webhook_secret_overlap();
        INSERT INTO webhook_previous_secrets (endpoint_id, secret) VALUES (OLD.id, OLD.secret)
          ON CONFLICT (endpoint_id, secret) DO UPDATE SET rotated_at = EXCLUDED.rotated_at;
        -- What the previous release signs with (it knows one old secret only).
        NEW.previous_secret := OLD.secret;
        NEW.previous_secret_until := now() + webhook_secret_overlap();
        RETURN NEW;
      END $$`);
    await db.query(`CREATE TRIGGER webhook_endpoints_keep_previous_secret BEFORE UPDATE OF secret ON webhook_endpoints
      FOR EACH ROW WHEN (NEW.secret IS DISTINCT FROM OLD.secret)
      EXECUTE FUNCTION webhook_endpoints_keep_previous_secret()`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TRIGGER webhook_endpoints_keep_previous_secret ON webhook_endpoints');
    await db.query('DROP FUNCTION webhook_endpoints_keep_previous_secret()');
    await db.query('DROP TABLE webhook_previous_secrets');
    await db.query('DROP FUNCTION webhook_secret_overlap()');
  }
}
