import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { Settings } from '../config/settings.js';
import { createDataSource } from './data-source.js';
import { walPositions } from './wal-positions.repository.js';

/** A replica's state as /health/ready reports it. */
export interface ReplicaStatus {
  /** host:port/database, never the credentials. */
  readonly name: string;
  /** `lagging`: it had not replayed the primary's position when last asked; `down`: unreachable, skipped for a while. */
  readonly state: 'up' | 'lagging' | 'down';
  /** Reads it served. */
  readonly reads: number;
  /** Reads that went to the primary because it lagged or was down. */
  readonly skipped: number;
}

interface Replica {
  readonly name: string;
  readonly source: DataSource;
  state: 'up' | 'lagging' | 'down';
  /** The furthest position it was seen to have replayed (replay only moves forward). */
  replayed: bigint;
  downUntil: number;
  reads: number;
  skipped: number;
}

/** How long a replica that failed is left alone before it is tried again. */
const DOWN_FOR_MS = 5000;

function nameOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.host}${parsed.pathname}`;
}

/**
 * Reads of cache misses (details and list pages) on read replicas (DATABASE_READ_URLS), never on
 * one that could show a state older than a write whose response was sent (API.md part 12).
 *
 * Before such a read the primary is asked for its flushed WAL position: every commit that has
 * returned, on any instance, lies at or below it, the caller's own last write included. A replica
 * that has replayed that far has every such write; its next snapshot shows them. One that has not
 * (lagging, replay paused) or does not answer is skipped, and the read goes to the primary. The
 * position is asked once for all the reads that began while an earlier ask was under way (an ask
 * already running may have started before them, so they wait for the next): under load that is
 * one small primary query per round trip, not one per read.
 */
@Injectable()
export class ReadReplicas implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ReadReplicas');
  private readonly replicas: Replica[];
  private next = 0;
  private asking: Promise<bigint> | undefined;
  private queued: Promise<bigint> | undefined;
  /** Reads that went to the primary because no replica had caught up (or none answered). */
  primaryReads = 0;

  constructor(
    private readonly primary: DataSource,
    settings: Settings,
  ) {
    this.replicas = settings.databaseReadUrls.map((url) => ({
      name: nameOf(url),
      source: createDataSource(
        // A replica that does not answer is skipped: it may not hold a read up for long.
        { ...settings, dbConnectTimeoutMs: Math.min(settings.dbConnectTimeoutMs, 1000) },
        url,
        `${settings.dbApplicationName}-read`,
      ),
      state: 'down',
      replayed: 0n,
      downUntil: 0,
      reads: 0,
      skipped: 0,
    }));
  }

  async onModuleInit(): Promise<void> {
    await Promise.all(this.replicas.map((replica) => this.connect(replica)));
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(
      this.replicas.filter((replica) => replica.source.isInitialized).map((replica) => replica.source.destroy()),
    );
  }

  get status(): ReplicaStatus[] {
    return this.replicas.map(({ name, state, reads, skipped }) => ({ name, state, reads, skipped }));
  }

  /** Runs a read on a replica that has every write answered so far, or else on the primary. */
  async read<T>(work: (db: EntityManager) => Promise<T>): Promise<T> {
    if (this.replicas.length === 0) return work(this.primary.manager);
    const position = await this.primaryPosition();
    for (let tried = 0; tried < this.replicas.length; tried += 1) {
      const replica = this.replicas[(this.next + tried) % this.replicas.length];
      if (replica === undefined || !(await this.caughtUp(replica, position))) continue;
      this.next = (this.next + tried + 1) % this.replicas.length;
      try {
        const result = await work(replica.source.manager);
        replica.reads += 1;
        return result;
      } catch (error) {
        // The primary answers instead (a recovery conflict, a replica going away): if the read
        // itself is at fault it fails there the same way.
        this.markDown(replica, error);
      }
    }
    this.primaryReads += 1;
    return work(this.primary.manager);
  }

  /** The primary's flushed WAL position, from an ask that began after this call. */
  private primaryPosition(): Promise<bigint> {
    if (this.asking === undefined) return this.ask();
    this.queued ??= this.asking
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.queued = undefined;
        return this.ask();
      });
    return this.queued;
  }

  private ask(): Promise<bigint> {
    const asking = walPositions.flushed(this.primary.manager).finally(() => {
      if (this.asking === asking) this.asking = undefined;
    });
    this.asking = asking;
    return asking;
  }

  private async caughtUp(replica: Replica, position: bigint): Promise<boolean> {
    if (replica.state === 'down') {
      if (Date.now() < replica.downUntil || !(await this.connect(replica))) {
        replica.skipped += 1;
        return false;
      }
    }
    if (replica.replayed < position) {
      try {
        const replayed = await walPositions.replayed(replica.source.manager);
        if (replayed === undefined) {
          this.markDown(replica, new Error('it is not replaying (promoted, or not a replica)'));
          replica.skipped += 1;
          return false;
        }
        if (replayed > replica.replayed) replica.replayed = replayed;
      } catch (error) {
        this.markDown(replica, error);
        replica.skipped += 1;
        return false;
      }
    }
    replica.state = replica.replayed >= position ? 'up' : 'lagging';
    if (replica.state === 'lagging') replica.skipped += 1;
    return replica.state === 'up';
  }

  /** Opens the replica's pool; false (and down for a while) when it does not answer. */
  private async connect(replica: Replica): Promise<boolean> {
    if (replica.source.isInitialized) {
      replica.state = 'lagging'; // not trusted before its replay position is read again
      replica.replayed = 0n;
      return true;
    }
    try {
      await replica.source.initialize();
      replica.state = 'lagging';
      this.logger.log({ msg: 'read replica connected', replica: replica.name });
      return true;
    } catch (error) {
      this.markDown(replica, error);
      return false;
    }
  }

  private markDown(replica: Replica, error: unknown): void {
    if (replica.state !== 'down')
      this.logger.warn({
        msg: 'read replica skipped; reads go to the primary for a while',
        replica: replica.name,
        err: error instanceof Error ? error.message : String(error),
      });
    replica.state = 'down';
    replica.downUntil = Date.now() + DOWN_FOR_MS;
  }
}
