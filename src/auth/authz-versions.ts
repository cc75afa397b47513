import type { EntityManager } from 'typeorm';

/**
 * What a cached authorization projection was built from: a user's permission grants or a
 * device's authority set. Every write that changes one bumps its version inside the write's
 * transaction, so a rebuilt entry always outranks one loaded before the write.
 */
export type AuthzScope = 'user' | 'device';

export async function bumpAuthzVersion(db: EntityManager, scope: AuthzScope, id: number): Promise<void> {
  await db.query(
    `INSERT INTO authz_versions (scope, id, version) VALUES ($1, $2, 2)
     ON CONFLICT (scope, id) DO UPDATE SET version = authz_versions.version + 1`,
    [scope, id],
  );
}

/** Bumps several at once (bulk writes touch many devices). */
export async function bumpAuthzVersions(db: EntityManager, scope: AuthzScope, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `INSERT INTO authz_versions (scope, id, version) SELECT $1, unnest($2::bigint[]), 2
     ON CONFLICT (scope, id) DO UPDATE SET version = authz_versions.version + 1`,
    [scope, [...new Set(ids)].sort((a, b) => a - b)],
  );
}
