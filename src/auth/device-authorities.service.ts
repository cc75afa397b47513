import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CacheAside } from '../cache/cache-aside.js';
import { cacheKeys } from '../cache/cache-keys.js';
import { arrayOf } from '../cache/decode.js';
import type { CacheEntry } from '../cache/cache-store.js';
import { CacheService } from '../cache/cache.service.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { AUTHORITY_FACTS_SELECT, type AuthorityFacts } from './authority-facts.js';

/**
 * Each device's authority set, the cached projection layer 3c reads on every device-scoped
 * request: the live (active, unrevoked, undeleted) authorities with their permission codes.
 * Versioned by `projection_versions`; every write that changes the set rebuilds it after commit,
 * so a revoke or deactivation takes effect on the very next request.
 */
@Injectable()
export class DeviceAuthoritiesService {
  private readonly cached: CacheAside<readonly AuthorityFacts[]>;

  constructor(
    cache: CacheService,
    private readonly uow: UnitOfWork,
  ) {
    this.cached = new CacheAside(
      cache,
      cacheKeys.deviceAuthorities,
      (id) => this.load(this.uow.reader, id),
      arrayOf<AuthorityFacts>({
        id: 'number',
        device_id: 'number',
        user_id: 'number',
        owner: 'boolean',
        is_active: 'boolean',
        permissions: 'array',
      }),
    );
  }

  async forDevice(deviceId: number): Promise<readonly AuthorityFacts[]> {
    const read = await this.cached.get(deviceId);
    return read === undefined ? [] : read.value;
  }

  /** After a bulk commit: mark the devices' sets stale at their new versions; each reloads on its next use. */
  async invalidate(versions: ReadonlyMap<number, number>): Promise<void> {
    await this.cached.invalidate(versions);
  }

  /**
   * After a commit that changed the devices' authorities, their permissions or owners: every
   * set rebuilt from one statement, written back in one pipelined burst (bulk writes touch
   * hundreds of devices).
   */
  async refresh(deviceIds: readonly number[]): Promise<void> {
    const ids = [...new Set(deviceIds)];
    if (ids.length === 0) return;
    const rows = await this.uow.reader.query<{ device_id: number; version: number; authorities: AuthorityFacts[] }[]>(
      `SELECT d.id AS device_id, coalesce(v.version, 1) AS version,
              (SELECT coalesce(json_agg(f), '[]'::json) FROM (
                 SELECT ${AUTHORITY_FACTS_SELECT} FROM authorities a
                 WHERE a.device_id = d.id AND NOT a.is_deleted AND a.revoked_at IS NULL AND a.is_active) f) AS authorities
       FROM unnest($1::bigint[]) AS d(id) LEFT JOIN projection_versions v ON v.scope = 'device' AND v.id = d.id`,
      [ids],
    );
    await Promise.all(
      rows.map((row) =>
        this.cached.refresh(row.device_id, {
          version: Number(row.version),
          deleted: false,
          json: JSON.stringify(row.authorities),
        }),
      ),
    );
  }

  // One statement, one snapshot: the version read can never be newer than the set it labels.
  private async load(db: EntityManager, deviceId: number): Promise<CacheEntry> {
    const [row] = await db.query<{ version: number; authorities: AuthorityFacts[] }[]>(
      `SELECT coalesce((SELECT version FROM projection_versions WHERE scope = 'device' AND id = $1), 1) AS version,
              (SELECT coalesce(json_agg(f), '[]'::json) FROM (
                 SELECT ${AUTHORITY_FACTS_SELECT} FROM authorities a
                 WHERE a.device_id = $1 AND NOT a.is_deleted AND a.revoked_at IS NULL AND a.is_active) f) AS authorities`,
      [deviceId],
    );
    return { version: Number(row?.version ?? 1), deleted: false, json: JSON.stringify(row?.authorities ?? []) };
  }
}
