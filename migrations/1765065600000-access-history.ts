import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Access history (part 6.13): every fact that decides access keeps its past, in the database,
 * written by the same transaction that changes it, so "who could do P on D at T" is answered from
 * rows rather than rebuilt from logs.
 *
 * - `user_access_history`, `authority_history`, `authority_permission_history`: one row per
 *   version of the deciding columns (a user's role, status and deletion; an authority's owner
 *   flag, activation, revocation, deletion and expiry; an authority permission's being active).
 *   A version holds from its `valid_from` until the next version of the same record: the rows are
 *   only ever appended (the database refuses DELETE and TRUNCATE, and every UPDATE but the one
 *   that stamps `valid_from` as the writing transaction commits), never closed in place.
 *   `valid_from` is the moment the changing transaction commits (a deferred trigger stamps it, as
 *   the feed's commit step does), so the newest version at or before T is the state at T as the
 *   guards saw it, ties broken by `id`.
 *   Statement-level triggers with transition tables keep bulk writes set-based.
 * - `authority_right_history`: the authority and authority-permission facts again, one row per
 *   version of each (authority, right) with the authority's state on it, where a right is an
 *   authority permission or ownership (0). It answers "where may U do P at T" from one index
 *   range, so the answer costs what it returns, not what else U holds.
 * - Permission grants already are their own history: append-only, changed only by the one
 *   revocation stamp, so a grant held during [granted_at, revoked_at). Both stamps are now the
 *   transaction's time, set by the database whatever the statement says.
 * - The history begins here: the current state is copied as the first version of every record,
 *   and `access_history_start` says when (a question about an earlier moment is refused).
 */
export class AccessHistory1765065600000 implements MigrationInterface {
  name = 'AccessHistory1765065600000';

  /** Tables this migration's triggers write (the access history); no repository writes them. */
  static readonly triggerWritten = [
    'user_access_history',
    'authority_history',
    'authority_permission_history',
    'authority_right_history',
    'access_history_transactions',
  ];

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE TABLE access_history_start (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        started_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
      )`);
    await db.query('INSERT INTO access_history_start DEFAULT VALUES');

    await db.query(`CREATE TABLE user_access_history (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        user_id bigint NOT NULL,
        role_id integer NOT NULL,
        status_id integer NOT NULL,
        is_deleted boolean NOT NULL,
        valid_from timestamptz NULL,
        xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
        actor_id bigint NULL
      )`);
    await db.query(
      'CREATE INDEX user_access_history_as_of_idx ON user_access_history (user_id, valid_from DESC, id DESC) INCLUDE (role_id, status_id, is_deleted)',
    );
    // "Who holds P by role at T": the users who ever had such a role, each then checked at T.
    await db.query('CREATE INDEX user_access_history_role_idx ON user_access_history (role_id, user_id)');

    await db.query(`CREATE TABLE authority_history (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        authority_id bigint NOT NULL,
        device_id bigint NOT NULL,
        user_id bigint NOT NULL,
        owner boolean NOT NULL,
        is_active boolean NOT NULL,
        revoked boolean NOT NULL,
        is_deleted boolean NOT NULL,
        expires_at timestamptz NULL,
        valid_from timestamptz NULL,
        xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
        actor_id bigint NULL
      )`);
    await db.query(
      'CREATE INDEX authority_history_as_of_idx ON authority_history (authority_id, valid_from DESC, id DESC)',
    );
    await db.query(
      'CREATE INDEX authority_history_device_idx ON authority_history (device_id, authority_id, valid_from DESC, id DESC)',
    );
    // Expiry is judged at the moment asked; the next one bounds how long a live answer is good.
    await db.query('CREATE INDEX authorities_expires_at_idx ON authorities (expires_at) WHERE expires_at IS NOT NULL');

    await db.query(`CREATE TABLE authority_permission_history (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        authority_permission_id bigint NOT NULL,
        authority_id bigint NOT NULL,
        device_id bigint NOT NULL,
        user_id bigint NOT NULL,
        permission_id integer NOT NULL,
        is_active boolean NOT NULL,
        valid_from timestamptz NULL,
        xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
        actor_id bigint NULL
      )`);
    await db.query(
      'CREATE INDEX authority_permission_history_as_of_idx ON authority_permission_history (authority_permission_id, valid_from DESC, id DESC)',
    );
    await db.query(
      'CREATE INDEX authority_permission_history_authority_idx ON authority_permission_history (authority_id, authority_permission_id)',
    );

    // The same facts again, per (authority, right): "where may U do P at T" is then one index
    // range per right, whatever else U holds (a user may hold 50 000 authorities). A right is an
    // authority permission (its permission id) or ownership (0); each row carries the authority's
    // state with it, and a new row is appended whenever either side changes.
    await db.query(`CREATE TABLE authority_right_history (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        authority_id bigint NOT NULL,
        device_id bigint NOT NULL,
        user_id bigint NOT NULL,
        permission_id integer NOT NULL,
        held boolean NOT NULL,
        usable boolean NOT NULL,
        expires_at timestamptz NULL,
        valid_from timestamptz NULL,
        xid xid8 NOT NULL DEFAULT pg_current_xact_id()
      )`);
    await db.query(
      'CREATE INDEX authority_right_history_as_of_idx ON authority_right_history (user_id, permission_id, authority_id, valid_from DESC, id DESC) INCLUDE (device_id, held, usable, expires_at)',
    );
    await db.query(
      'CREATE INDEX authority_right_history_key_idx ON authority_right_history (authority_id, permission_id, valid_from DESC)',
    );

    // A history row is written once, then stamped once: its `valid_from` is set as its
    // transaction commits (below), by that transaction; nothing else may change it, ever.
    await db.query(`CREATE FUNCTION access_history_stamp_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.valid_from IS NULL AND NEW.valid_from IS NOT NULL AND NEW.xid = OLD.xid
           AND OLD.xid = pg_current_xact_id() THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
    for (const table of [
      'access_history_start',
      'user_access_history',
      'authority_history',
      'authority_permission_history',
      'authority_right_history',
    ]) {
      const update = table === 'access_history_start' ? 'refuse_change' : 'access_history_stamp_only';
      await db.query(
        `CREATE TRIGGER ${table}_append_only BEFORE UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${update}()`,
      );
      await db.query(
        `CREATE TRIGGER ${table}_no_delete BEFORE DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION refuse_change()`,
      );
      await db.query(
        `CREATE TRIGGER ${table}_no_truncate BEFORE TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION refuse_change()`,
      );
      if (table !== 'access_history_start')
        await db.query(`CREATE INDEX ${table}_unstamped_idx ON ${table} (xid) WHERE valid_from IS NULL`);
    }

    // The commit step, as the event feed's: one row per transaction that wrote history, whose
    // deferred trigger fires once, just before COMMIT, and stamps the transaction's versions with
    // that moment. A version therefore starts when its change becomes visible (not when its
    // transaction began, which may be long before, if it waited for a lock), all of a transaction's
    // versions start at one instant, and a later writer of the same record, which waited for this
    // one's commit, stamps after it.
    await db.query('CREATE TABLE access_history_transactions (xid xid8 PRIMARY KEY)');
    await db.query(`CREATE FUNCTION access_history_written() RETURNS void LANGUAGE plpgsql AS $$
      DECLARE
        writer xid8 := pg_current_xact_id();
      BEGIN
        IF current_setting('admin_api.history_xid', true) IS DISTINCT FROM writer::text THEN
          INSERT INTO access_history_transactions (xid) VALUES (writer) ON CONFLICT DO NOTHING;
          PERFORM set_config('admin_api.history_xid', writer::text, true);
        END IF;
      END $$`);
    await db.query(`CREATE FUNCTION access_history_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        stamp timestamptz := clock_timestamp();
      BEGIN
        UPDATE user_access_history SET valid_from = stamp WHERE xid = NEW.xid AND valid_from IS NULL;
        UPDATE authority_history SET valid_from = stamp WHERE xid = NEW.xid AND valid_from IS NULL;
        UPDATE authority_permission_history SET valid_from = stamp WHERE xid = NEW.xid AND valid_from IS NULL;
        UPDATE authority_right_history SET valid_from = stamp WHERE xid = NEW.xid AND valid_from IS NULL;
        DELETE FROM access_history_transactions WHERE xid = NEW.xid;
        PERFORM set_config('admin_api.history_xid', '', true);
        RETURN NULL;
      END $$`);
    await db.query(`CREATE CONSTRAINT TRIGGER access_history_transactions_commit AFTER INSERT ON access_history_transactions
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION access_history_commit()`);

    // Users: a version when the role, status or deletion changes.
    await db.query(`CREATE FUNCTION users_access_versions() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM access_history_written();
        IF TG_OP = 'INSERT' THEN
          INSERT INTO user_access_history (user_id, role_id, status_id, is_deleted, actor_id)
          SELECT n.id, n.role_id, n.status_id, n.is_deleted, n.created_by FROM new_rows n ORDER BY n.id;
        ELSIF TG_OP = 'DELETE' THEN
          -- The application never deletes a user row; one deleted by hand is recorded as deleted.
          INSERT INTO user_access_history (user_id, role_id, status_id, is_deleted, actor_id)
          SELECT o.id, o.role_id, o.status_id, true, NULL FROM old_rows o ORDER BY o.id;
        ELSE
          INSERT INTO user_access_history (user_id, role_id, status_id, is_deleted, actor_id)
          SELECT n.id, n.role_id, n.status_id, n.is_deleted, n.updated_by
          FROM new_rows n JOIN old_rows o ON o.id = n.id
          WHERE (n.role_id, n.status_id, n.is_deleted) IS DISTINCT FROM (o.role_id, o.status_id, o.is_deleted)
          ORDER BY n.id;
        END IF;
        RETURN NULL;
      END $$`);
    await db.query(`CREATE TRIGGER users_access_history_insert AFTER INSERT ON users
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION users_access_versions()`);
    await db.query(`CREATE TRIGGER users_access_history_update AFTER UPDATE ON users
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION users_access_versions()`);
    await db.query(`CREATE TRIGGER users_access_history_delete AFTER DELETE ON users
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION users_access_versions()`);

    // Authorities: a version when what decides layer 3c changes (the pair never changes), and
    // the rights that carry the authority's state: ownership, and every authority permission held
    // (read after this statement's row locks, which the writers of authority permissions wait for).
    await db.query(`CREATE FUNCTION authorities_access_versions() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM access_history_written();
        IF TG_OP = 'INSERT' THEN
          INSERT INTO authority_history (authority_id, device_id, user_id, owner, is_active, revoked, is_deleted, expires_at, actor_id)
          SELECT n.id, n.device_id, n.user_id, n.owner, n.is_active, n.revoked_at IS NOT NULL, n.is_deleted, n.expires_at, n.created_by
          FROM new_rows n ORDER BY n.id;
          INSERT INTO authority_right_history (authority_id, device_id, user_id, permission_id, held, usable, expires_at)
          SELECT n.id, n.device_id, n.user_id, 0, true, n.is_active AND n.revoked_at IS NULL AND NOT n.is_deleted, n.expires_at
          FROM new_rows n WHERE n.owner ORDER BY n.id;
        ELSIF TG_OP = 'DELETE' THEN
          -- Never by the application (authorities are soft-deleted); one deleted by hand is recorded as deleted.
          INSERT INTO authority_history (authority_id, device_id, user_id, owner, is_active, revoked, is_deleted, expires_at, actor_id)
          SELECT o.id, o.device_id, o.user_id, o.owner, o.is_active, o.revoked_at IS NOT NULL, true, o.expires_at, NULL
          FROM old_rows o ORDER BY o.id;
          INSERT INTO authority_right_history (authority_id, device_id, user_id, permission_id, held, usable, expires_at)
          SELECT o.id, o.device_id, o.user_id, 0, o.owner, false, o.expires_at FROM old_rows o WHERE o.owner ORDER BY o.id;
        ELSE
          INSERT INTO authority_history (authority_id, device_id, user_id, owner, is_active, revoked, is_deleted, expires_at, actor_id)
          SELECT n.id, n.device_id, n.user_id, n.owner, n.is_active, n.revoked_at IS NOT NULL, n.is_deleted, n.expires_at, n.updated_by
          FROM new_rows n JOIN old_rows o ON o.id = n.id
          WHERE (n.owner, n.is_active, n.revoked_at IS NOT NULL, n.is_deleted, n.expires_at)
                IS DISTINCT FROM (o.owner, o.is_active, o.revoked_at IS NOT NULL, o.is_deleted, o.expires_at)
          ORDER BY n.id;
          INSERT INTO authority_right_history (authority_id, device_id, user_id, permission_id, held, usable, expires_at)
          SELECT r.authority_id, r.device_id, r.user_id, r.permission_id, r.held, r.usable, r.expires_at
          FROM (
            SELECT n.id AS authority_id, n.device_id, n.user_id, 0 AS permission_id, n.owner AS held,
                   n.is_active AND n.revoked_at IS NULL AND NOT n.is_deleted AS usable, n.expires_at
            FROM new_rows n JOIN old_rows o ON o.id = n.id
            WHERE (n.owner OR o.owner)
              AND (n.owner, n.is_active, n.revoked_at IS NOT NULL, n.is_deleted, n.expires_at)
                  IS DISTINCT FROM (o.owner, o.is_active, o.revoked_at IS NOT NULL, o.is_deleted, o.expires_at)
            UNION ALL
            SELECT n.id, n.device_id, n.user_id, ap.permission_id, true,
                   n.is_active AND n.revoked_at IS NULL AND NOT n.is_deleted, n.expires_at
            FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN authority_permissions ap ON ap.authority_id = n.id AND ap.revoked_at IS NULL
            WHERE (n.is_active, n.revoked_at IS NOT NULL, n.is_deleted, n.expires_at)
                  IS DISTINCT FROM (o.is_active, o.revoked_at IS NOT NULL, o.is_deleted, o.expires_at)
          ) r ORDER BY r.authority_id, r.permission_id;
        END IF;
        RETURN NULL;
      END $$`);
    await db.query(`CREATE TRIGGER authorities_access_history_insert AFTER INSERT ON authorities
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION authorities_access_versions()`);
    await db.query(`CREATE TRIGGER authorities_access_history_update AFTER UPDATE ON authorities
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION authorities_access_versions()`);
    await db.query(`CREATE TRIGGER authorities_access_history_delete AFTER DELETE ON authorities
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION authorities_access_versions()`);

    // Authority permissions: active when granted, inactive when revoked (the only change allowed).
    // A right row carries its authority's state: the authority is share-locked first, so a
    // concurrent change to it either waits for this transaction or has committed and is read
    // here (and a change to it reads this permission once this commits). The same two
    // statements for both; an update keeps only the rows whose revocation changed.
    const permissionVersions = (from: string): string => `
          PERFORM 1 FROM authorities a WHERE a.id IN (SELECT n.authority_id FROM new_rows n) ORDER BY a.id FOR SHARE;
          INSERT INTO authority_permission_history (authority_permission_id, authority_id, device_id, user_id, permission_id, is_active, actor_id)
          SELECT n.id, n.authority_id, a.device_id, a.user_id, n.permission_id, n.revoked_at IS NULL,
                 CASE WHEN n.revoked_at IS NULL THEN n.granted_by ELSE n.revoked_by END
          ${from} ORDER BY n.id;
          INSERT INTO authority_right_history (authority_id, device_id, user_id, permission_id, held, usable, expires_at)
          SELECT n.authority_id, a.device_id, a.user_id, n.permission_id, n.revoked_at IS NULL,
                 a.is_active AND a.revoked_at IS NULL AND NOT a.is_deleted, a.expires_at
          ${from} ORDER BY n.id;`;
    await db.query(`CREATE FUNCTION authority_permissions_access_versions() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM access_history_written();
        IF TG_OP = 'INSERT' THEN
          ${permissionVersions('FROM new_rows n JOIN authorities a ON a.id = n.authority_id')}
        ELSE
          ${permissionVersions(`FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN authorities a ON a.id = n.authority_id
          WHERE (n.revoked_at IS NULL) IS DISTINCT FROM (o.revoked_at IS NULL)`)}
        END IF;
        RETURN NULL;
      END $$`);
    await db.query(`CREATE TRIGGER authority_permissions_access_history_insert AFTER INSERT ON authority_permissions
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION authority_permissions_access_versions()`);
    await db.query(`CREATE TRIGGER authority_permissions_access_history_update AFTER UPDATE ON authority_permissions
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION authority_permissions_access_versions()`);

    // Permission grants: the validity period is the database's own clock, never the statement's,
    // read as the row is written (after any lock wait), and a revocation never before its grant.
    await db.query(`CREATE FUNCTION permission_grants_stamp_period() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          NEW.granted_at := clock_timestamp();
        ELSIF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL THEN
          NEW.revoked_at := greatest(clock_timestamp(), OLD.granted_at);
        END IF;
        RETURN NEW;
      END $$`);
    await db.query(`CREATE TRIGGER permission_grants_period BEFORE INSERT OR UPDATE ON permission_grants
      FOR EACH ROW EXECUTE FUNCTION permission_grants_stamp_period()`);
    await db.query(
      'CREATE INDEX permission_grants_period_idx ON permission_grants (user_id, granted_at) INCLUDE (permission_id, revoked_at, expires_at)',
    );
    await db.query(
      'CREATE INDEX permission_grants_permission_period_idx ON permission_grants (permission_id, user_id, granted_at)',
    );

    // The first version of every record: the state as this migration found it, valid from the
    // start as the API shows it (to the millisecond), so asking exactly at that moment finds it.
    const START = '(SELECT started_at FROM access_history_start)';
    await db.query(`INSERT INTO user_access_history (user_id, role_id, status_id, is_deleted, valid_from)
      SELECT id, role_id, status_id, is_deleted, ${START} FROM users ORDER BY id`);
    await db.query(`INSERT INTO authority_history (authority_id, device_id, user_id, owner, is_active, revoked, is_deleted, expires_at, valid_from)
      SELECT id, device_id, user_id, owner, is_active, revoked_at IS NOT NULL, is_deleted, expires_at, ${START} FROM authorities ORDER BY id`);
    await db.query(`INSERT INTO authority_permission_history (authority_permission_id, authority_id, device_id, user_id, permission_id, is_active, valid_from)
      SELECT ap.id, ap.authority_id, a.device_id, a.user_id, ap.permission_id, true, ${START}
      FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id WHERE ap.revoked_at IS NULL ORDER BY ap.id`);
    await db.query(`INSERT INTO authority_right_history (authority_id, device_id, user_id, permission_id, held, usable, expires_at, valid_from)
      SELECT id, device_id, user_id, 0, true, is_active AND revoked_at IS NULL AND NOT is_deleted, expires_at, ${START}
      FROM authorities WHERE owner ORDER BY id`);
    await db.query(`INSERT INTO authority_right_history (authority_id, device_id, user_id, permission_id, held, usable, expires_at, valid_from)
      SELECT a.id, a.device_id, a.user_id, ap.permission_id, true, a.is_active AND a.revoked_at IS NULL AND NOT a.is_deleted, a.expires_at, ${START}
      FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id WHERE ap.revoked_at IS NULL ORDER BY a.id, ap.permission_id`);
    await db.query('ANALYZE authority_right_history');
    await db.query('ANALYZE user_access_history');
    await db.query('ANALYZE authority_history');
    await db.query('ANALYZE authority_permission_history');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TRIGGER permission_grants_period ON permission_grants');
    await db.query('DROP FUNCTION permission_grants_stamp_period()');
    await db.query('DROP INDEX permission_grants_period_idx');
    await db.query('DROP INDEX permission_grants_permission_period_idx');
    for (const [table, fn] of [
      ['users', 'users_access_versions'],
      ['authorities', 'authorities_access_versions'],
      ['authority_permissions', 'authority_permissions_access_versions'],
    ] as const) {
      await db.query(`DROP TRIGGER ${table}_access_history_insert ON ${table}`);
      await db.query(`DROP TRIGGER ${table}_access_history_update ON ${table}`);
      await db.query(`DROP TRIGGER IF EXISTS ${table}_access_history_delete ON ${table}`);
      await db.query(`DROP FUNCTION ${fn}()`);
    }
    await db.query('DROP INDEX authorities_expires_at_idx');
    await db.query('DROP TRIGGER access_history_transactions_commit ON access_history_transactions');
    await db.query('DROP TABLE access_history_transactions');
    await db.query('DROP FUNCTION access_history_commit()');
    await db.query('DROP FUNCTION access_history_written()');
    await db.query(
      'DROP TABLE authority_right_history, authority_permission_history, authority_history, user_access_history, access_history_start',
    );
    await db.query('DROP FUNCTION access_history_stamp_only()');
  }
}
