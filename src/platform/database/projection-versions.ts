import type { EntityManager } from 'typeorm';

/**
 * Versions of cached projections that span many rows: a user's permission grants, a device's
 * authority set, a user's read-state counts, what a user holds through its groups (`user_groups`:
 * its effective role on its detail, and its auth context). Every write that changes one bumps its version
 * inside the write's transaction, so a rebuilt entry always outranks one loaded before the write.
 */
export type ProjectionScope = 'user' | 'user_groups' | 'group' | 'device' | 'read_counts';

export async function bumpProjectionVersion(db: EntityManager, scope: ProjectionScope, id: number): Promise<void> {
  await db.query(
    `INSERT INTO projection_versions (scope, id, version) VALUES ($1, $2, 2)
     ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version + 1`,
    [scope, id],
  );
}

/** Bumps several at once (bulk writes touch many devices); returns each one's new version. */
export async function bumpProjectionVersions(
  db: EntityManager,
  scope: ProjectionScope,
  ids: readonly number[],
): Promise<Map<number, number>> {
  if (ids.length === 0) return new Map();
  // Sorted, so concurrent writers lock the rows in one order and cannot deadlock.
  const rows = await db.query<{ id: number; version: number }[]>(
    `INSERT INTO projection_versions (scope, id, version) SELECT $1, unnest($2::bigint[]), 2
     ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version + 1 RETURNING id, version`,
    [scope, [...new Set(ids)].sort((a, b) => a - b)],
  );
  return new Map(rows.map((row) => [Number(row.id), Number(row.version)]));
}
