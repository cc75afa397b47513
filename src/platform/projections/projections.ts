import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CacheEntries } from '../cache/cache-entries.js';
import { TableGenerations } from '../cache/table-generations.js';
import { ReadReplicas } from '../database/read-replicas.js';

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

  /** A read that fills the cache (a detail or a list page on a miss). */
  load<T>(work: (db: EntityManager) => Promise<T>): Promise<T> {
    return this.replicas.read(work);
  }
}
