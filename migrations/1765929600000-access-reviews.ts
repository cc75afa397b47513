import type { MigrationInterface, QueryRunner } from 'typeorm';
import { BASE_RECORD_COLUMNS_V1 as BASE_RECORD_COLUMNS } from './record-columns-v1.js';

/**
 * Access reviews (part 6.16): a campaign and its items, the revocable paths (and owner
 * authorities) live when it was snapshotted. The campaign keeps its decision counts in step with
 * its items (each decision updates both under the campaign's lock), so a read is one row.
 * `unused_days` is UNUSED_ACCESS_DAYS when it was created: the rule behind the items'
 * recommendations does not move under a running campaign. An item's `outcome` is set by the
 * close, chunk by chunk in the chunk's transaction: a close that crashed resumes where it stopped.
 */
export class AccessReviews1765929600000 implements MigrationInterface {
  name = 'AccessReviews1765929600000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE access_reviews (${BASE_RECORD_COLUMNS},
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        scope jsonb NOT NULL DEFAULT '{}',
        default_decision text NOT NULL CHECK (default_decision IN ('keep', 'revoke')),
        due_at timestamptz NOT NULL,
        state text NOT NULL DEFAULT 'preparing'
          CHECK (state IN ('preparing', 'open', 'closing', 'closed', 'cancelled')),
        unused_days integer NOT NULL CHECK (unused_days >= 0),
        item_count integer NOT NULL DEFAULT 0,
        keep_count integer NOT NULL DEFAULT 0,
        revoke_count integer NOT NULL DEFAULT 0,
        result jsonb NULL,
        job_id text NULL,
        opened_at timestamptz NULL,
        closed_at timestamptz NULL,
        -- The reviewers told so far (user ids in order), for the opening notice and the one due soon.
        open_notices_through bigint NOT NULL DEFAULT 0,
        open_notices_done boolean NOT NULL DEFAULT false,
        due_notices_through bigint NOT NULL DEFAULT 0,
        due_notices_done boolean NOT NULL DEFAULT false
      )`);
    await db.query('CREATE INDEX access_reviews_state_idx ON access_reviews (state, id)');
    await db.query(
      "CREATE INDEX access_reviews_notices_idx ON access_reviews (due_at) WHERE state = 'open' AND NOT due_notices_done",
    );
    await db.query(
      'CREATE TRIGGER access_reviews_version BEFORE UPDATE ON access_reviews FOR EACH ROW EXECUTE FUNCTION bump_row_version()',
    );
    await db.query(`
      CREATE TABLE access_review_items (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        review_id bigint NOT NULL REFERENCES access_reviews (id) ON DELETE CASCADE,
        kind char(1) NOT NULL CHECK (kind IN ('g', 'a', 'o')),
        path_id bigint NOT NULL,
        user_id bigint NOT NULL,
        device_id bigint NULL,
        permission_id integer NULL,
        authority_id bigint NULL,
        granted_at timestamptz NOT NULL,
        decision text NULL CHECK (decision IN ('keep', 'revoke')),
        note text NULL CHECK (length(note) <= 500),
        reviewer_id bigint NULL,
        decided_at timestamptz NULL,
        outcome text NULL CHECK (outcome IN ('revoked', 'kept', 'failed')),
        UNIQUE (review_id, kind, path_id),
        CHECK ((kind = 'g') = (device_id IS NULL)),
        CHECK (kind <> 'o' OR decision IS DISTINCT FROM 'revoke')
      )`);
    // The items in their order (id), with each filter, and the close's walk over what is left.
    await db.query('CREATE INDEX access_review_items_review_idx ON access_review_items (review_id, id)');
    await db.query('CREATE INDEX access_review_items_device_idx ON access_review_items (review_id, device_id, id)');
    await db.query('CREATE INDEX access_review_items_user_idx ON access_review_items (review_id, user_id, id)');
    await db.query(
      'CREATE INDEX access_review_items_open_idx ON access_review_items (review_id, id) WHERE outcome IS NULL',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE access_review_items');
    await db.query('DROP TABLE access_reviews');
  }
}
