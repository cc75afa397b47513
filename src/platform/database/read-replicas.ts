import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { DataSource, type EntityManager, type QueryRunner } from 'typeorm';
import type { Settings } from '../config/settings.js';
import { dataSourceOptions } from './data-source.js';
import { walPositions } from './wal-positions.repository.js';

/** A replica's state as /health/ready reports it. */
export interface ReplicaStatus {
  /** host:port/database, never the credentials. */
  readonly name: string;
  /** `lagging`: it had not replayed the primary's position when last asked; `down`: unreachable or not replaying, skipped for a while. */
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
  downUntil: number;
  reads: number;
  skipped: number;
}

/** Gives the connection back to the pool as broken (pg-pool then destroys it). */
async function destroyConnection(runner: QueryRunner, error: unknown): Promise<void> {
  // TypeORM's PostgreSQL runner passes this error on to pg-pool; its public `release()` cannot.
  const postgres = runner as unknown as { releasePostgresConnection?: (error: unknown) => Promise<void> };
  if (postgres.releasePostgresConnection !== undefined)
    await postgres.releasePostgresConnection(error instanceof Error ? error : new Error(String(error)));
}

/** How long a replica that failed is left alone before it is tried again. */
const DOWN_FOR_MS = 5000;

class NotReplaying extends Error {
  constructor() {
    super('it is not replaying (promoted, or not a replica)');
  }
}

/**
 * The replica is gone or unreachable (connection exceptions, an administrator's shutdown, a
 * socket error or a connect/query timeout), as opposed to a statement it refused: a bad or slow
 * query of one request must not take the replica away from every other read.
 */
function isConnectionFailure(error: unknown): boolean {
  const code =
    (error as { code?: unknown; driverError?: { code?: unknown } }).driverError?.code ??
    (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT…
  // A SQLSTATE decides on its own: a statement the replica refused is not the replica failing.
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return /^(08|57P0[1-3]|53300)/.test(code);
  const message = error instanceof Error ? error.message : String(error);
  return (
    /timeout|terminated|Connection|connect/i.test(message) && !/statement timeout|canceling statement/i.test(message)
  );
}

/**
 * A replica's pool: a replica that does not answer is skipped, so it may not hold a read up for
 * long, not even on a connection already open (a client-side timeout past the statement timeout).
 */
function replicaSource(settings: Settings, url: string): DataSource {
  const quick = { ...settings, dbConnectTimeoutMs: Math.min(settings.dbConnectTimeoutMs, 1000) };
  const options = dataSourceOptions(quick, url, `${settings.dbApplicationName}-read`);
  return new DataSource({
    ...options,
    extra: { ...(options.extra as object), query_timeout: settings.dbStatementTimeoutMs + 1000 },
  });
}

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

  constructor(
    private readonly primary: DataSource,
    settings: Settings,
  ) {
    this.replicas = settings.databaseReadUrls.map((url) => ({
      name: nameOf(url),
      source: replicaSource(settings, url),
      state: 'down',
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
    const now = Date.now();
    if (this.replicas.every((replica) => replica.state === 'down' && now < replica.downUntil)) {
      for (const replica of this.replicas) replica.skipped += 1;
      return work(this.primary.manager);
    }
    const position = await this.primaryPosition();
    for (let tried = 0; tried < this.replicas.length; tried += 1) {
      const replica = this.replicas[(this.next + tried) % this.replicas.length];
      if (replica === undefined) continue;
      this.next = (this.next + tried + 1) % this.replicas.length;
      const read = await this.onReplica(replica, position, work);
      if (read !== undefined) return read.value;
    }
    return work(this.primary.manager);
  }

  /**
   * The read on `replica` if it has replayed `position`, else undefined. The check and the read
   * run in one read-committed transaction on one connection: behind a balancer or a pooler that
   * spreads connections over several replicas, a check on one connection says nothing about
   * another, and a replica restarted from an older point reuses its address. Each statement of
   * the read takes its snapshot after the check, so it sees at least what the check saw.
   */
  private async onReplica<T>(
    replica: Replica,
    position: bigint,
    work: (db: EntityManager) => Promise<T>,
  ): Promise<{ value: T } | undefined> {
    if (replica.state === 'down' && (Date.now() < replica.downUntil || !(await this.connect(replica)))) {
      replica.skipped += 1;
      return undefined;
    }
    let runner: QueryRunner | undefined;
    try {
      runner = replica.source.createQueryRunner('slave');
      await runner.connect();
      await runner.startTransaction('READ COMMITTED');
      const replayed = await walPositions.replayed(runner.manager);
      if (replayed === undefined) throw new NotReplaying();
      if (replayed < position) {
        replica.state = 'lagging';
        replica.skipped += 1;
        return undefined;
      }
      replica.state = 'up';
      const value = await work(runner.manager);
      replica.reads += 1;
      return { value };
    } catch (error) {
      // The primary answers instead (if the read itself is at fault it fails there the same way);
      // only a replica that is unreachable or not replaying is left alone for a while.
      const unreachable = isConnectionFailure(error);
      if (error instanceof NotReplaying || unreachable) this.markDown(replica, error);
      replica.skipped += 1;
      // A connection that failed (a query that timed out may still run on it) is destroyed, not
      // rolled back and handed to the next read.
      if (unreachable && runner !== undefined) await destroyConnection(runner, error);
      return undefined;
    } finally {
      if (runner !== undefined && !runner.isReleased) {
        if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
        await runner.release().catch(() => undefined);
      }
    }
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

  /** Opens the replica's pool; false (and down for a while) when it does not answer. */
  private async connect(replica: Replica): Promise<boolean> {
    if (replica.source.isInitialized) {
      replica.state = 'lagging';
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
