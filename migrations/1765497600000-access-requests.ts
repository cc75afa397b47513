import type { MigrationInterface, QueryRunner } from 'typeorm';
import { BASE_RECORD_COLUMNS_V1 as BASE_RECORD_COLUMNS } from './record-columns-v1.js';

/**
 * Access requests (part 6.15): an operator asks for a device-scoped permission on a device it is
 * related to, for a while; an approver grants it as an authority permission that expires. One
 * pending request per (requester, device, permission) is enforced here, so two concurrent asks
 * cannot both pass a check made before the insert. The permission's code is copied in (codes
 * never change) so that the row is read without a join. `approvers` holds the users notified.
 */
export class AccessRequests1765497600000 implements MigrationInterface {
  name = 'AccessRequests1765497600000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE access_requests (${BASE_RECORD_COLUMNS},
        requester_id bigint NOT NULL REFERENCES users (id),
        device_id bigint NOT NULL REFERENCES devices (id),
        authority_id bigint NOT NULL REFERENCES authorities (id),
        permission_id integer NOT NULL REFERENCES permissions (id),
        permission_code text NOT NULL,
        reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
        duration_seconds integer NOT NULL CHECK (duration_seconds >= 300),
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved', 'denied', 'cancelled', 'expired')),
        expires_at timestamptz NOT NULL,
        decided_by bigint NULL,
        decided_at timestamptz NULL,
        decision_reason text NULL CHECK (length(decision_reason) <= 500),
        authority_permission_id bigint NULL REFERENCES authority_permissions (id),
        access_expires_at timestamptz NULL,
        approvers bigint[] NOT NULL DEFAULT '{}',
        CHECK ((state = 'approved') = (authority_permission_id IS NOT NULL)),
        CHECK ((state = 'pending') = (decided_at IS NULL))
      )`);
    await db.query(
      "CREATE UNIQUE INDEX access_requests_one_pending_key ON access_requests (requester_id, device_id, permission_id) WHERE state = 'pending'",
    );
    // The list's filters with its default sort (id:desc), its other sort, and the expiry job's scan.
    for (const column of ['requester_id', 'device_id', 'permission_id', 'state'])
      await db.query(`CREATE INDEX access_requests_${column}_idx ON access_requests (${column}, id)`);
    await db.query('CREATE INDEX access_requests_created_idx ON access_requests (created_at, id)');
    await db.query('CREATE INDEX access_requests_expires_idx ON access_requests (expires_at)');
    await db.query(
      "CREATE INDEX access_requests_pending_expiry_idx ON access_requests (expires_at, id) WHERE state = 'pending'",
    );
    await db.query(
      'CREATE TRIGGER access_requests_version BEFORE UPDATE ON access_requests FOR EACH ROW EXECUTE FUNCTION bump_row_version()',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE access_requests');
  }
}
