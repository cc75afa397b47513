import { Injectable } from '@nestjs/common';
import { CacheAside } from '../platform/cache/cache-aside.js';
import { cacheKeys } from '../platform/cache/cache-keys.js';
import { arrayOf } from '../platform/cache/decode.js';
import type { CacheEntry } from '../platform/cache/cache-store.js';
import { CacheEntries } from '../platform/cache/cache-entries.js';
import { AccessFactsRepository, type DeviceAuthoritySet } from './access-facts.repository.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';

function entryOf(set: DeviceAuthoritySet): CacheEntry {
  return { version: set.version, deleted: false, json: JSON.stringify(set.authorities) };
}

/**
 * Each device's authority set, the cached projection layer 3c reads on every device-scoped
 * request: the live (active, unrevoked, undeleted) authorities with their authority permissions,
 * each with its expiry (judged by the rules at decision time, never when the set was built).
 * Versioned by `projection_versions`; every write that changes the set rebuilds it after commit,
 * so a revoke or deactivation takes effect on the very next request.
 */
@Injectable()
export class DeviceAuthoritiesService {
  private readonly cached: CacheAside<readonly AuthorityFacts[]>;

  constructor(
    cache: CacheEntries,
    private readonly facts: AccessFactsRepository,
  ) {
    this.cached = new CacheAside(
      cache,
      cacheKeys.deviceAuthorities,
      async (id) => {
        const [set] = await this.facts.deviceAuthoritySets([id]);
        return set === undefined ? undefined : entryOf(set);
      },
      arrayOf<AuthorityFacts>({
        id: 'number',
        device_id: 'number',
        // A group's authority has no user (v1.3); an entry from before groups lacks group_id: a miss.
        user_id: 'number|null',
        group_id: 'number|null',
        owner: 'boolean',
        is_active: 'boolean',
        revoked: 'boolean',
        deleted: 'boolean',
        expires_at: 'string|null',
        // Renamed from `permissions` (codes) when each gained its expiry: an entry of the old shape is a miss.
        authority_permissions: 'array',
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
    const sets = await this.facts.deviceAuthoritySets(ids);
    await Promise.all(sets.map((set) => this.cached.refresh(set.device_id, entryOf(set))));
  }

  /** A triggered rebuild: every device's set, a thousand devices per statement; answers how many. */
  async warmAll(): Promise<number> {
    let written = 0;
    for (let after = 0; ;) {
      const ids = await this.facts.deviceIdsAfter(after, 1000);
      if (ids.length === 0) return written;
      await this.refresh(ids);
      written += ids.length;
      after = ids[ids.length - 1] ?? after;
    }
  }
}
