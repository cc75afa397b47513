import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The newest version of every (authority, right) of the rights history (migration
 * `access-history`), kept as one row per pair: `authority_rights`. "Where may U do P now" then
 * counts and pages an index of the usable rows, instead of picking the newest version of each of
 * U's rights out of their whole history (a user with 10 000 rights, 2 000 of them revoked since,
 * read 12 000 versions to answer 8 000).
 *
 * A row is the history version it copies, with that version's `valid_from` and id: the commit
 * step that stamps a transaction's versions writes the newest of each pair here in the same
 * statement, so a reader sees the row exactly when it sees the version. The history therefore
 * still decides every answer: a row whose version began after the moment asked is no answer for
 * that moment (the reader then reads the history, as for any moment in the past).
 */
export class AuthorityRightsNow1765584000000 implements MigrationInterface {
  name = 'AuthorityRightsNow1765584000000';

  /** Written by the access history's commit step only. */
  static readonly triggerWritten = ['authority_rights'];

  async up(db: QueryRunner): Promise<void> {
    // No writer of the rights history in between: the copy below is its state at this commit.
    await db.query('LOCK TABLE authority_right_history IN SHARE MODE');
    await db.query(`CREATE TABLE authority_rights (
        authority_id bigint NOT NULL,
        permission_id integer NOT NULL,
        device_id bigint NOT NULL,
        user_id bigint NOT NULL,
        held boolean NOT NULL,
        usable boolean NOT NULL,
        expires_at timestamptz NULL,
        valid_from timestamptz NOT NULL,
        version_id bigint NOT NULL,
        PRIMARY KEY (authority_id, permission_id)
      )`);
    // "Where may U do P": U's usable rows of one right, in device order (the answer's), whole.
    await db.query(
      'CREATE INDEX authority_rights_usable_idx ON authority_rights (user_id, permission_id, device_id, authority_id) INCLUDE (expires_at) WHERE held AND usable',
    );
    // Whether any of U's rows began after the moment asked (then the history answers).
    await db.query(
      'CREATE INDEX authority_rights_since_idx ON authority_rights (user_id, valid_from) INCLUDE (permission_id)',
    );
    await db.query(`INSERT INTO authority_rights (authority_id, permission_id, device_id, user_id, held, usable, expires_at, valid_from, version_id)
      SELECT DISTINCT ON (r.authority_id, r.permission_id) r.authority_id, r.permission_id, r.device_id, r.user_id,
             r.held, r.usable, r.expires_at, r.valid_from, r.id
      FROM authority_right_history r WHERE r.valid_from IS NOT NULL
      ORDER BY r.authority_id, r.permission_id, r.valid_from DESC, r.id DESC`);
    await db.query(commitStep(true));
    await db.query('ANALYZE authority_rights');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(commitStep(false));
    await db.query('DROP TABLE authority_rights');
  }
}

/**
 * The access history's commit step (as migration `access-history` wrote it), with (`rights`) or
 * without the copy of each (authority, right)'s newest version stamped here into
 * `authority_rights`. Versions of one pair are ordered as the history orders them (stamp, then
 * id); a row is only ever replaced by a later version.
 */
function commitStep(rights: boolean): string {
  const stampRights = rights
    ? `WITH stamped AS (
          UPDATE authority_right_history SET valid_from = stamp WHERE xid = NEW.xid AND valid_from IS NULL
          RETURNING id, authority_id, permission_id, device_id, user_id, held, usable, expires_at, valid_from)
        INSERT INTO authority_rights AS c (authority_id, permission_id, device_id, user_id, held, usable, expires_at, valid_from, version_id)
        SELECT DISTINCT ON (s.authority_id, s.permission_id) s.authority_id, s.permission_id, s.device_id, s.user_id,
               s.held, s.usable, s.expires_at, s.valid_from, s.id
        FROM stamped s ORDER BY s.authority_id, s.permission_id, s.id DESC
        ON CONFLICT (authority_id, permission_id) DO UPDATE SET device_id = EXCLUDED.device_id, user_id = EXCLUDED.user_id,
          held = EXCLUDED.held, usable = EXCLUDED.usable, expires_at = EXCLUDED.expires_at,
          valid_from = EXCLUDED.valid_from, version_id = EXCLUDED.version_id
        WHERE (c.valid_from, c.version_id) < (EXCLUDED.valid_from, EXCLUDED.version_id);`
    : 'UPDATE authority_right_history SET valid_from = stamp WHERE xid = NEW.xid AND valid_from IS NULL;';
  return `CREATE OR REPLACE FUNCTION access_history_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        stamp timestamptz := clock_timestamp();
      BEGIN
        UPDATE user_access_history SET valid_from = stamp WHERE xid = NEW.xid AND valid_from IS NULL;
        UPDATE authority_history SET valid_from = stamp WHERE xid = NEW.xid AND valid_from IS NULL;
        UPDATE authority_permission_history SET valid_from = stamp WHERE xid = NEW.xid AND valid_from IS NULL;
        ${stampRights}
        DELETE FROM access_history_transactions WHERE xid = NEW.xid;
        PERFORM set_config('admin_api.history_xid', '', true);
        RETURN NULL;
      END $$`;
}
