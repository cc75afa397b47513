/** A primary and its streaming replica of our own (initdb, then pg_basebackup -R), on free loopback ports. */
export class PrimaryWithReplica {
  readonly primaryPort: number;
  readonly replicaPort: number;
  static start(): Promise<PrimaryWithReplica>;
  url(database: string, on: 'primary' | 'replica'): string;
  createDatabase(name: string): Promise<void>;
  waitForReplica(timeoutMs?: number): Promise<void>;
  pauseReplay(): Promise<unknown>;
  resumeReplay(): Promise<unknown>;
  startReplica(): Promise<void>;
  stopReplica(): Promise<void>;
  stop(): Promise<void>;
}
