import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CacheEntries } from '../cache/cache-entries.js';
import { TableGenerations } from '../cache/table-generations.js';
import type { CachedRead, PrefetchedLookup } from '../cache/cache-aside.js';
import { ReadReplicas } from '../database/read-replicas.js';

/** A resource type's plain cached hit among a request's prefetched entries (`CacheAside.hit`). */
export type DetailHit = (id: number, prefetched: PrefetchedLookup) => CachedRead<{ readonly id: number }> | undefined;

/**
 * Where the cache meets the database, for reads only: a projection (a detail entry, a list page)
 * asks the cache, and on a miss loads through here, downwards, on a read replica that has replayed
 * every write answered so far, else on the primary (part 12). Writes never pass here: they go
 * through the unit of work, which rebuilds projections after its commit.
 */
@Injectable()
export class Projections {
  constructor(
    readonly entries: CacheEntries,
    readonly generations: TableGenerations,
    private readonly replicas: ReadReplicas,
  ) {}

  private readonly details = new Map<string, DetailHit>();

  /** Each resource type's cached detail registers its hit (`ResourceTable`), for the answers sent as stored. */
  registerDetail(type: string, hit: DetailHit): void {
    if (!this.details.has(type)) this.details.set(type, hit);
  }

  detailHit(type: string): DetailHit | undefined {
    return this.details.get(type);
  }

  /** A read that fills the cache (a detail or a list page on a miss). */
  load<T>(work: (db: EntityManager) => Promise<T>): Promise<T> {
    return this.replicas.read(work);
  }
}
