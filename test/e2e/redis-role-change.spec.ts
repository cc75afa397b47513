import { createServer, connect, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@keyv/redis';
import { startApp, type TestApp } from '../support/app.js';
import { command, field, follow, portOf, replicated } from '../support/redis-replication.js';
import { freePort, OwnRedis } from '../support/redis-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { testCachePrefix } from '../support/test-env.js';

/**
 * A server's role can change under a connection that stays open, so a stamp learned once per
 * connection is not enough: every plain read asks the server what it is (INFO replication, in the
 * same round trip) and trusts nothing read from a replica. Two ways that hold no connection event
 * between the moment the stamp is learned and the moment the server's data becomes another's:
 *
 * 1. Sentinel's own reconfiguration of a demoted master (REPLICAOF + CLIENT KILL TYPE normal in one
 *    MULTI): the kill comes BEFORE the resync. A client that reconnects in between (the default
 *    repl-diskless-sync-delay is 5 s) learns the pre-sync stamp; the full resync that then replaces
 *    the data (and the replication id) closes no client connection.
 * 2. Redis's built-in coordinated failover, `FAILOVER` (6.2+), closes no client connection on either
 *    side; with FORCE it may lose writes the target had not received. Failing over and back on the
 *    same connection is the failback of redis-failback.spec, which the stamp was meant to close.
 */

/** Several commands in one MULTI, on a connection of its own (Sentinel reconfigures a server so). */
async function multi(redis: OwnRedis, ...commands: string[][]): Promise<void> {
  const client = createClient({ url: redis.url, socket: { reconnectStrategy: false } });
  client.on('error', () => undefined);
  await client.connect();
  try {
    let tx = client.multi();
    for (const args of commands) tx = tx.addCommand(args);
    await tx.exec();
  } finally {
    await client.close();
  }
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const role = async (redis: OwnRedis): Promise<string | undefined> =>
  field(await command(redis, 'INFO', 'replication'), 'role');
const linkUp = async (redis: OwnRedis): Promise<boolean> =>
  field(await command(redis, 'INFO', 'replication'), 'master_link_status') === 'up';
/** Normal clients connected to `redis`, the one asking included. */
const normalClients = async (redis: OwnRedis): Promise<number> =>
  (await command(redis, 'CLIENT', 'LIST', 'TYPE', 'normal')).split('\n').filter((line) => line.trim() !== '').length;

/**
 * A relay whose master-to-replica direction can be held: the replica stays linked (its acks still
 * reach the master) but receives nothing more, and what was held is dropped with the link.
 */
class HoldingLink {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private held = false;

  constructor(
    private readonly targetPort: number,
    readonly port: number,
  ) {}

  async open(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
        socket.on('error', () => socket.destroy());
      }
      client.on('data', (chunk: Buffer) => upstream.write(chunk));
      upstream.on('data', (chunk: Buffer) => {
        if (!this.held) client.write(chunk);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(this.port, '127.0.0.1', resolve));
  }

  hold(): void {
    this.held = true;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = undefined;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The ids of the normal connections in a CLIENT LIST answer, but the one that asked. */
const appConnections = (list: string): string[] =>
  list
    .split('\n')
    .filter((line) => line.includes('id=') && !line.includes('cmd=client|list'))
    .map((line) => /id=(\d+)/.exec(line)?.[1] ?? '');

const read = async (app: TestApp, id: number): Promise<{ weight: number; cache: string }> => {
  const response = await app.http().get(`/v1/test/widgets/${id}`).expect(200);
  return { weight: response.body.data.weight as number, cache: response.body.meta.cache as string };
};

const create = async (app: TestApp, name: string): Promise<number> =>
  (await app.http().post('/v1/test/widgets').send({ name, category: 'part', weight: 1 }).expect(201)).body.data
    .id as number;

describe('Sentinel demotes the master the service is connected to: its kill comes before the resync', () => {
  let a: OwnRedis;
  let b: OwnRedis;
  let link: TcpProxy;
  let toB: TcpProxy | undefined;
  let app: TestApp;
  const prefix = testCachePrefix('role-sentinel');

  beforeAll(async () => {
    [a, b] = await Promise.all([OwnRedis.start(), OwnRedis.start()]);
    link = new TcpProxy('127.0.0.1', portOf(a), await freePort());
    await link.open();
    await follow(b, a, link.port);
    await replicated(a);
    // The service is configured with A's address (Sentinel kills its connection on reconfiguration).
    app = await startApp({ redisUrl: a.url, cachePrefix: prefix, env: { CACHE_TIMEOUT_MS: '2000' } });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await Promise.all([link?.cut(), toB?.cut()]);
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('a stamp learned between the kill and the resync does not bless the new master’s copy of an old generation', async () => {
    const id = await create(app, 'sentinel-demotion');
    await read(app, id);
    expect(await read(app, id)).toEqual({ weight: 1, cache: 'hit' });
    await replicated(a);

    // A acknowledges the write of weight 2 alone; B is promoted without it.
    await link.cut();
    await app.http().patch(`/v1/test/widgets/${id}`).send({ weight: 2 }).expect(200);
    expect(await read(app, id)).toEqual({ weight: 2, cache: 'hit' });
    await command(b, 'REPLICAOF', 'NO', 'ONE');
    await command(b, 'CONFIG', 'SET', 'repl-diskless-sync', 'yes', 'repl-diskless-sync-delay', '0');

    // Sentinel reconfigures A as B's replica: REPLICAOF and CLIENT KILL TYPE normal in one MULTI.
    // B is not reachable yet from A (as during the default 5 s repl-diskless-sync-delay).
    toB = new TcpProxy('127.0.0.1', portOf(b), await freePort());
    await multi(a, ['REPLICAOF', '127.0.0.1', String(toB.port)], ['CLIENT', 'KILL', 'TYPE', 'normal']);
    expect(await role(a)).toBe('slave');
    // The service reconnects (its connection was killed) and reads: A still holds its own data.
    await until('the service to reconnect', async () => (await normalClients(a)) >= 2);
    // A replica's data is never trusted: the read answers from the database.
    expect(await read(app, id)).toEqual({ weight: 2, cache: 'bypass' });

    // Now A resyncs from B: its data is B's (weight 1 under the generation A stamped before the cut).
    await toB.open();
    // B's WAIT answers once A, its replica now, has acknowledged all of B's data: A has resynced.
    await replicated(b);

    // No connection event since the service learned A's stamp.
    const served = await read(app, id);
    expect(served).toEqual({ weight: 2, cache: expect.any(String) as string });
  }, 60_000);
});

describe('FAILOVER (the built-in coordinated failover) to the replica and back, on one connection', () => {
  let a: OwnRedis;
  let b: OwnRedis;
  let link: HoldingLink;
  let app: TestApp;
  const prefix = testCachePrefix('role-failover-cmd');

  beforeAll(async () => {
    [a, b] = await Promise.all([OwnRedis.start(), OwnRedis.start()]);
    link = new HoldingLink(portOf(a), await freePort());
    await link.open();
    await follow(b, a, link.port);
    await replicated(a);
    await command(b, 'CONFIG', 'SET', 'repl-diskless-sync', 'yes', 'repl-diskless-sync-delay', '0');
    app = await startApp({ redisUrl: a.url, cachePrefix: prefix, env: { CACHE_TIMEOUT_MS: '2000' } });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await link?.close();
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('an invalidation A acknowledged and lost in a forced FAILOVER stays lost after FAILOVER back to A', async () => {
    const id = await create(app, 'failover-command');
    await read(app, id);
    expect(await read(app, id)).toEqual({ weight: 1, cache: 'hit' });
    await replicated(a);
    const clientsBefore = await command(a, 'CLIENT', 'LIST', 'TYPE', 'normal');

    // B stays linked but hears nothing more: A acknowledges the write of weight 2 alone.
    link.hold();
    await app.http().patch(`/v1/test/widgets/${id}`).send({ weight: 2 }).expect(200);
    expect(await read(app, id)).toEqual({ weight: 2, cache: 'hit' });

    // A forced FAILOVER to B (B never catches up); A resyncs from B (B's data: weight 1).
    await command(a, 'FAILOVER', 'TO', '127.0.0.1', String(portOf(b)), 'TIMEOUT', '500', 'FORCE');
    // FAILOVER answers before it is done: B is not a master yet to WAIT on.
    await until('A to be B’s synced replica', async () => (await role(a)) === 'slave' && (await linkUp(a)));
    expect(await role(b)).toBe('master');

    // And back: B hands over to A (nothing lost this time). A is the master again, a new replication id.
    // B refuses a FAILOVER to a replica it does not yet list as online, which lags A's own view of the
    // link (a suite run under load met "FAILOVER target replica is not online").
    await until('B to list A as an online replica', async () =>
      new RegExp(`^slave\\d+:ip=127\\.0\\.0\\.1,port=${portOf(a)},state=online`, 'm').test(
        await command(b, 'INFO', 'replication'),
      ),
    );
    await command(b, 'FAILOVER', 'TO', '127.0.0.1', String(portOf(a)));
    await until('A to be the master again', async () => (await role(a)) === 'master');

    // The service's connection to A was never closed: the stamp it learned before is still the one it uses.
    const after = await command(a, 'CLIENT', 'LIST', 'TYPE', 'normal');
    expect(
      appConnections(after).filter((connection) => appConnections(clientsBefore).includes(connection)),
    ).not.toEqual([]);

    const served = await read(app, id);
    expect(served).toEqual({ weight: 2, cache: expect.any(String) as string });
  }, 60_000);
});
