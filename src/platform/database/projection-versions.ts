import type { EntityManager } from 'typeorm';

/**
 * Versions of cached projections that span many rows: a user's permission grants, a device's
 * authority set, a user's read-state counts, what a user holds through its groups (`user_groups`:
 * its effective role on its detail, and its auth context). Every write that changes one bumps its version
 * inside the write's transaction, so a rebuilt entry always outranks one loaded before the write.
 */
export type ProjectionScope = 'user' | 'user_groups' | 'group' | 'device' | 'read_counts';

/**
 * How far a bump moves versions whose entries the write marks stale inside its transaction
 * (`Tx.bumpProjections` with `markedStale`). A marker is a floor: a fill at its version or above
 * replaces it. Another write of the same user that commits between the marker and this write's
 * commit (a PATCH) does not count this bump, so it rebuilds the entry at the marker's version less
 * this step plus its own increments: below the marker, refused, where a step of 1 put it at the
 * marker's very version and its rebuild, without this write's change, stood.
 */
export const MARKED_STALE_STEP = 1 << 20;

/** The advisory lock under which writes with marked bumps make them, one at a time (arbitrary constant). */
export const MARKED_BUMPS_LOCK = 7_314_402_119;

export async function bumpProjectionVersion(db: EntityManager, scope: ProjectionScope, id: number): Promise<void> {
  await db.query(
    `INSERT INTO projection_versions (scope, id, version) VALUES ($1, $2, 2)
     ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version + 1`,
    [scope, id],
  );
}

/**
 * Bumps several at once (bulk writes touch many devices), each by its step; returns each one's
 * new version.
 */
export async function bumpProjectionVersions(
  db: EntityManager,
  scope: ProjectionScope,
  steps: ReadonlyMap<number, number>,
): Promise<Map<number, number>> {
  if (steps.size === 0) return new Map();
  // Sorted, so concurrent writers lock the rows in one order and cannot deadlock. A missing row
  // reads as version 1.
  const ids = [...steps.keys()].sort((a, b) => a - b);
  const rows = await db.query<{ id: number; version: number }[]>(
    `INSERT INTO projection_versions (scope, id, version)
     SELECT $1, t.id, 1 + t.step FROM unnest($2::bigint[], $3::bigint[]) AS t(id, step) ORDER BY t.id
     ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version + (EXCLUDED.version - 1)
     RETURNING id, version`,
    [scope, ids, ids.map((id) => steps.get(id) ?? 1)],
  );
  return new Map(rows.map((row) => [Number(row.id), Number(row.version)]));
}
