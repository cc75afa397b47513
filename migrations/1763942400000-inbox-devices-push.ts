import type { MigrationInterface, QueryRunner } from 'typeorm';
import {
  BASE_RECORD_COLUMNS_V1 as BASE_RECORD_COLUMNS,
  SOFT_DELETE_COLUMNS_V1 as SOFT_DELETE_COLUMNS,
} from './record-columns-v1.js';

/** Inbox messages, their read state, mobile devices and push delivery attempts (parts 6.7-6.10). */
export class InboxDevicesPush1763942400000 implements MigrationInterface {
  name = 'InboxDevicesPush1763942400000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE inbox_messages (${BASE_RECORD_COLUMNS}, ${SOFT_DELETE_COLUMNS},
        user_id bigint NOT NULL REFERENCES users (id),
        conversation_id text NULL CHECK (length(conversation_id) BETWEEN 1 AND 64),
        type text NOT NULL CHECK (type ~ '^[a-z][a-z0-9_]{0,31}$'),
        title text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
        body text NOT NULL CHECK (length(body) <= 10000),
        data jsonb NULL,
        last_pushed_at timestamptz NULL
      )`);
    await db.query('CREATE INDEX inbox_messages_user_idx ON inbox_messages (user_id, created_at DESC, id)');
    await db.query(
      'CREATE INDEX inbox_messages_conversation_idx ON inbox_messages (conversation_id, created_at DESC, id)',
    );
    await db.query('CREATE INDEX inbox_messages_type_idx ON inbox_messages (type, created_at DESC, id)');
    await db.query('CREATE INDEX inbox_messages_created_idx ON inbox_messages (created_at DESC, id)');
    await db.query('CREATE INDEX inbox_messages_updated_idx ON inbox_messages (updated_at, id)');
    await db.query(
      'CREATE INDEX inbox_messages_search_idx ON inbox_messages USING gin (title gin_trgm_ops, body gin_trgm_ops)',
    );
    await db.query(
      'CREATE TRIGGER inbox_messages_version BEFORE UPDATE ON inbox_messages FOR EACH ROW EXECUTE FUNCTION bump_row_version()',
    );

    await db.query(`
      CREATE TABLE message_read_state (${BASE_RECORD_COLUMNS},
        message_id bigint NOT NULL REFERENCES inbox_messages (id),
        user_id bigint NOT NULL REFERENCES users (id),
        conversation_id text NULL,
        is_read boolean NOT NULL DEFAULT false,
        read_at timestamptz NULL,
        is_archived boolean NOT NULL DEFAULT false,
        archived_at timestamptz NULL,
        is_pinned boolean NOT NULL DEFAULT false,
        pinned_at timestamptz NULL,
        snoozed_until timestamptz NULL
      )`);
    await db.query(
      'CREATE UNIQUE INDEX message_read_state_message_user_key ON message_read_state (message_id, user_id)',
    );
    await db.query('CREATE INDEX message_read_state_user_idx ON message_read_state (user_id, conversation_id, id)');
    await db.query('CREATE INDEX message_read_state_updated_idx ON message_read_state (updated_at, id)');
    await db.query('CREATE INDEX message_read_state_read_at_idx ON message_read_state (read_at, id)');
    await db.query(
      'CREATE TRIGGER message_read_state_version BEFORE UPDATE ON message_read_state FOR EACH ROW EXECUTE FUNCTION bump_row_version()',
    );

    await db.query(`
      CREATE TABLE mobile_devices (${BASE_RECORD_COLUMNS},
        user_id bigint NOT NULL REFERENCES users (id),
        platform text NOT NULL CHECK (platform IN ('ios', 'android', 'web')),
        push_token text NOT NULL CHECK (length(push_token) BETWEEN 8 AND 4096),
        app_version text NULL CHECK (length(app_version) <= 32),
        device_model text NULL CHECK (length(device_model) <= 100),
        is_active boolean NOT NULL DEFAULT true,
        deactivated_at timestamptz NULL,
        deactivated_by bigint NULL,
        deactivation_reason text NULL,
        token_refreshed_at timestamptz NULL
      )`);
    await db.query('CREATE UNIQUE INDEX mobile_devices_push_token_key ON mobile_devices (push_token)');
    await db.query('CREATE INDEX mobile_devices_user_idx ON mobile_devices (user_id, is_active, id)');
    await db.query('CREATE INDEX mobile_devices_created_idx ON mobile_devices (created_at, id)');
    await db.query('CREATE INDEX mobile_devices_updated_idx ON mobile_devices (updated_at, id)');
    await db.query(
      'CREATE TRIGGER mobile_devices_version BEFORE UPDATE ON mobile_devices FOR EACH ROW EXECUTE FUNCTION bump_row_version()',
    );

    // One row per delivery attempt of a send-push job to one device; retries skip devices
    // already delivered, so a retried job never pushes twice to the same device.
    await db.query(`
      CREATE TABLE push_deliveries (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        job_id uuid NOT NULL,
        message_id bigint NOT NULL REFERENCES inbox_messages (id),
        mobile_device_id bigint NOT NULL REFERENCES mobile_devices (id),
        provider text NOT NULL,
        outcome text NOT NULL CHECK (outcome IN ('sent', 'unregistered', 'failed', 'retryable')),
        error text NULL,
        attempted_at timestamptz NOT NULL DEFAULT now()
      )`);
    await db.query('CREATE INDEX push_deliveries_job_idx ON push_deliveries (job_id, mobile_device_id)');
    await db.query('CREATE INDEX push_deliveries_message_idx ON push_deliveries (message_id, attempted_at)');
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ['push_deliveries', 'mobile_devices', 'message_read_state', 'inbox_messages'])
      await db.query(`DROP TABLE ${table}`);
  }
}
