import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Expiring authority permissions (part 6.15): `authority_permissions.expires_at` (added by
 * `access-governance`) now decides access, so the history keeps it and the rules judge it at the
 * moment asked; no sweep is needed for correctness.
 *
 * - `authority_permission_history.expires_at`: each version records its row's expiry. Versions
 *   written before this migration have none, and none needed one: nothing could set it then.
 * - `authority_right_history.expires_at` of an authority permission's right becomes the earlier of
 *   the authority's and the permission's expiry (`least` skips nulls): when that right ends by
 *   itself. Ownership rights keep the authority's. Earlier rows keep their meaning, since their
 *   permissions had no expiry.
 * - An expired row no longer counts as the pair's active row, so the pair may be granted again:
 *   the unique index now covers live rows that never expire, and the writers (which lock the
 *   authority first) insert an expiring row, or any row, only where no live row is unexpired.
 *   A revocation of an already expired row writes no right version: the right is already gone,
 *   and a newer grant of the same pair must stay the right's newest version.
 * - The append-only rule freezes `expires_at` too: an expiry is set at grant and never moved.
 */
export class ExpiringAuthorityPermissions1765411200000 implements MigrationInterface {
  name = 'ExpiringAuthorityPermissions1765411200000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('ALTER TABLE authority_permission_history ADD COLUMN expires_at timestamptz NULL');
    await db.query(onlyRevoke(true));
    await db.query(permissionVersions(true));
    await db.query(authorityVersions(true));
    await db.query('DROP INDEX authority_permissions_active_key');
    await db.query(
      'CREATE UNIQUE INDEX authority_permissions_active_key ON authority_permissions (authority_id, permission_id) WHERE revoked_at IS NULL AND expires_at IS NULL',
    );
    // The next expiry bounds how long a cached list page or access answer is good.
    await db.query(
      'CREATE INDEX authority_permissions_expires_at_idx ON authority_permissions (expires_at) WHERE expires_at IS NOT NULL',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX authority_permissions_expires_at_idx');
    await db.query('DROP INDEX authority_permissions_active_key');
    await db.query(
      'CREATE UNIQUE INDEX authority_permissions_active_key ON authority_permissions (authority_id, permission_id) WHERE revoked_at IS NULL',
    );
    await db.query(authorityVersions(false));
    await db.query(permissionVersions(false));
    await db.query(onlyRevoke(false));
    await db.query('ALTER TABLE authority_permission_history DROP COLUMN expires_at');
  }
}

/** The append-only rule of `trust`, with `expires_at` among the frozen columns when `expiring`. */
function onlyRevoke(expiring: boolean): string {
  const frozen = `id, authority_id, permission_id, granted_by, granted_at${expiring ? ', expires_at' : ''}`;
  return `CREATE OR REPLACE FUNCTION authority_permissions_only_revoke() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
           AND (${frozen.replace(/(\w+)/g, 'NEW.$1')}) IS NOT DISTINCT FROM (${frozen.replace(/(\w+)/g, 'OLD.$1')}) THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'authority_permissions is append-only: only a live row may be revoked, once' USING ERRCODE = 'insufficient_privilege';
      END $$`;
}

/** `authority_permissions_access_versions` of `access-history`, keeping the expiry when `expiring`. */
function permissionVersions(expiring: boolean): string {
  const versions = (from: string, rightsWhere: string): string => `
          PERFORM 1 FROM authorities a WHERE a.id IN (SELECT n.authority_id FROM new_rows n) ORDER BY a.id FOR SHARE;
          INSERT INTO authority_permission_history (authority_permission_id, authority_id, device_id, user_id, permission_id, is_active, ${expiring ? 'expires_at, ' : ''}actor_id)
          SELECT n.id, n.authority_id, a.device_id, a.user_id, n.permission_id, n.revoked_at IS NULL, ${expiring ? 'n.expires_at, ' : ''}
                 CASE WHEN n.revoked_at IS NULL THEN n.granted_by ELSE n.revoked_by END
          ${from} ORDER BY n.id;
          INSERT INTO authority_right_history (authority_id, device_id, user_id, permission_id, held, usable, expires_at)
          SELECT n.authority_id, a.device_id, a.user_id, n.permission_id, n.revoked_at IS NULL,
                 a.is_active AND a.revoked_at IS NULL AND NOT a.is_deleted, ${expiring ? 'least(a.expires_at, n.expires_at)' : 'a.expires_at'}
          ${from} ${rightsWhere} ORDER BY n.id;`;
  const updated = `FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN authorities a ON a.id = n.authority_id
          WHERE (n.revoked_at IS NULL) IS DISTINCT FROM (o.revoked_at IS NULL)`;
  return `CREATE OR REPLACE FUNCTION authority_permissions_access_versions() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM access_history_written();
        IF TG_OP = 'INSERT' THEN
          ${versions('FROM new_rows n JOIN authorities a ON a.id = n.authority_id', '')}
        ELSE
          ${versions(updated, expiring ? 'AND (n.expires_at IS NULL OR n.expires_at > clock_timestamp())' : '')}
        END IF;
        RETURN NULL;
      END $$`;
}

/**
 * `authorities_access_versions` of `access-history`; when `expiring`, a permission's right carries
 * the earlier expiry, and permissions already expired get no new right version (their last one
 * already ends at their expiry, and a newer row of the pair may hold the right now).
 */
function authorityVersions(expiring: boolean): string {
  const permissionExpiry = expiring ? 'least(n.expires_at, ap.expires_at)' : 'n.expires_at';
  const unexpired = expiring ? ' AND (ap.expires_at IS NULL OR ap.expires_at > clock_timestamp())' : '';
  return `CREATE OR REPLACE FUNCTION authorities_access_versions() RETURNS trigger LANGUAGE plpgsql AS $$
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
                   n.is_active AND n.revoked_at IS NULL AND NOT n.is_deleted, ${permissionExpiry}
            FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN authority_permissions ap ON ap.authority_id = n.id AND ap.revoked_at IS NULL${unexpired}
            WHERE (n.is_active, n.revoked_at IS NOT NULL, n.is_deleted, n.expires_at)
                  IS DISTINCT FROM (o.is_active, o.revoked_at IS NOT NULL, o.is_deleted, o.expires_at)
          ) r ORDER BY r.authority_id, r.permission_id;
        END IF;
        RETURN NULL;
      END $$`;
}
