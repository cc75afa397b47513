import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CacheAside } from '../cache/cache-aside.js';
import { cacheKeys } from '../cache/cache-keys.js';
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
  private readonly cached: CacheAside;

  constructor(
    cache: CacheService,
    private readonly uow: UnitOfWork,
  ) {
    this.cached = new CacheAside(cache, cacheKeys.deviceAuthorities, (id) => this.load(this.uow.reader, id));
  }

  async forDevice(deviceId: number): Promise<readonly AuthorityFacts[]> {
    const read = await this.cached.get(deviceId);
    return read === undefined ? [] : (JSON.parse(read.entry.json) as AuthorityFacts[]);
  }

  /** After a commit that changed the device's authorities, their permissions or its owner. */
  async refresh(deviceIds: readonly number[]): Promise<void> {
    await Promise.all(
      [...new Set(deviceIds)].map(async (id) => {
        const entry = await this.load(this.uow.reader, id);
        await this.cached.refresh(id, entry);
      }),
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
