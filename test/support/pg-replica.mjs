import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { appendFile, chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './ports.mjs';

// Plain ESM: the specs and the scale-out benchmark (which runs on dist/, outside Jest) use it.
const run = promisify(execFile);

/** The PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup): PG_BINDIR, else the newest installed. */
function binDir() {
  if (process.env.PG_BINDIR !== undefined) return process.env.PG_BINDIR;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((version) => existsSync(join(root, version, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0] === undefined) throw new Error('no PostgreSQL server binaries found: set PG_BINDIR');
  return join(root, versions[0], 'bin');
}

/**
 * PostgreSQL refuses to run as root: as root the servers run as the `postgres` OS user (through
 * runuser), otherwise as whoever runs the tests.
 */
const AS_ROOT = userInfo().uid === 0;

async function postgresTool(tool, args) {
  const path = join(binDir(), tool);
  const [command, argv] = AS_ROOT ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, [...args]];
  const { stdout } = await run(command, argv, { timeout: 120_000 });
  return stdout;
}

async function sqlOn(url, text) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

/**
 * A primary and its streaming replica of our own, in a temporary directory, each on a free
 * loopback port: `initdb`, then `pg_basebackup -R` of the primary for the replica. The machine's
 * own server is not touched (its pg_hba allows no replication connection anyway).
 */
export class PrimaryWithReplica {
  constructor(dir, primaryPort, replicaPort) {
    this.dir = dir;
    this.primaryPort = primaryPort;
    this.replicaPort = replicaPort;
  }

  /** A database on the primary (created here), and the same database on the replica. */
  url(database, on) {
    return `postgresql://postgres@127.0.0.1:${on === 'primary' ? this.primaryPort : this.replicaPort}/${database}`;
  }

  static async start() {
    const dir = await mkdtemp(join(tmpdir(), 'admin-api-pg-'));
    if (AS_ROOT) {
      const { uid, gid } = await run('id', ['-u', 'postgres']).then(async ({ stdout }) => ({
        uid: Number(stdout),
        gid: Number((await run('id', ['-g', 'postgres'])).stdout),
      }));
      await chown(dir, uid, gid);
    }
    await chmod(dir, 0o700);
    const [primaryPort, replicaPort] = [await freePort(), await freePort()];
    const servers = new PrimaryWithReplica(dir, primaryPort, replicaPort);
    try {
      await postgresTool('initdb', [
        '-D',
        join(dir, 'primary'),
        '-U',
        'postgres',
        '--auth=trust',
        '--no-sync',
        '-E',
        'UTF8',
      ]);
      await appendFile(
        join(dir, 'primary', 'postgresql.conf'),
        [
          `port = ${primaryPort}`,
          "listen_addresses = '127.0.0.1'",
          `unix_socket_directories = '${dir}'`,
          'wal_level = replica',
          'max_wal_senders = 4',
          'fsync = off',
          'full_page_writes = off',
          "shared_buffers = '32MB'",
          '',
        ].join('\n'),
      );
      await servers.pgCtl('primary', 'start');
      await postgresTool('pg_basebackup', [
        '-h',
        '127.0.0.1',
        '-p',
        String(primaryPort),
        '-U',
        'postgres',
        '-D',
        join(dir, 'replica'),
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
      ]);
      await appendFile(
        join(dir, 'replica', 'postgresql.conf'),
        [`port = ${replicaPort}`, 'hot_standby = on', 'hot_standby_feedback = on', ''].join('\n'),
      );
      await servers.startReplica();
      return servers;
    } catch (error) {
      await servers.stop();
      throw error;
    }
  }

  async createDatabase(name) {
    await sqlOn(this.url('postgres', 'primary'), `CREATE DATABASE ${name}`);
  }

  /** Waits until the replica has replayed everything the primary has flushed. */
  async waitForReplica(timeoutMs = 20_000) {
    const deadline = Date.now() + timeoutMs;
    const [target] = await sqlOn(this.url('postgres', 'primary'), 'SELECT pg_current_wal_flush_lsn() AS lsn');
    for (;;) {
      const [row] = await sqlOn(
        this.url('postgres', 'replica'),
        `SELECT pg_last_wal_replay_lsn() >= '${target?.lsn ?? '0/0'}'::pg_lsn AS caught_up`,
      );
      if (row?.caught_up === true) return;
      if (Date.now() > deadline) throw new Error('the replica did not catch up');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  pauseReplay() {
    return sqlOn(this.url('postgres', 'replica'), 'SELECT pg_wal_replay_pause()');
  }

  resumeReplay() {
    return sqlOn(this.url('postgres', 'replica'), 'SELECT pg_wal_replay_resume()');
  }

  async startReplica() {
    await this.pgCtl('replica', 'start');
  }

  async stopReplica() {
    await this.pgCtl('replica', 'stop', ['-m', 'immediate']);
  }

  async stop() {
    for (const server of ['replica', 'primary'])
      if (existsSync(join(this.dir, server, 'postmaster.pid')))
        await this.pgCtl(server, 'stop', ['-m', 'immediate']).catch(() => undefined);
    await rm(this.dir, { recursive: true, force: true });
  }

  /** pg_ctl stops a server by the pid in its own data directory: only our servers. */
  async pgCtl(server, action, extra = []) {
    await postgresTool('pg_ctl', [
      '-D',
      join(this.dir, server),
      '-l',
      join(this.dir, `${server}.log`),
      '-w',
      '-t',
      '60',
      action,
      ...extra,
    ]);
  }
}
