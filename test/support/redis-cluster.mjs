// A Redis Cluster of our own on loopback ports (plain ESM: the global setup uses it too). Every
// node is a child process of this one, stopped by its own pid, and its files live in a temporary
// directory that `stop` removes.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { canListen, freePort } from './ports.mjs';

const run = promisify(execFile);

/** A port free with its cluster bus port (+10000). */
function freeClusterPort(taken) {
  return freePort(new Set([...taken].flatMap((port) => [port, port - 10_000])), (port) => canListen(port + 10_000));
}

async function cli(port, ...args) {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout.trim();
}

/** `CLUSTER NODES`, parsed: id, port, flags, master id, slot ranges. */
async function clusterNodes(port) {
  return (await cli(port, 'CLUSTER', 'NODES'))
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [id, address, flags, master, , , , , ...slots] = line.split(' ');
      return {
        id,
        port: Number(/:(\d+)@/.exec(address)?.[1]),
        flags: flags.split(','),
        master,
        slots: slots.filter((slot) => /^\d/.test(slot)),
      };
    });
}

function ownsSlot(node, slot) {
  return node.slots.some((range) => {
    const [from, to = from] = range.split('-').map(Number);
    return slot >= from && slot <= to;
  });
}

/**
 * Starts `masters` masters with `replicas` replicas each (default 3 + 3), joined with
 * `redis-cli --cluster create`, and waits until every node sees the cluster as ok.
 */
export async function startRedisCluster({ masters = 3, replicas = 1, nodeTimeoutMs = 1000 } = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'admin-api-cluster-'));
  const taken = new Set();
  const nodes = [];
  const cluster = {
    nodes,
    dir,
    get url() {
      return `redis+cluster://${nodes
        .filter((node) => node.alive)
        .map((node) => `127.0.0.1:${node.port}`)
        .join(',')}`;
    },
    /** Kills the master that serves `slot` (SIGKILL, by its pid) and returns its port. */
    async killMasterOf(slot) {
      const port = await cluster.masterOf(slot);
      const victim = nodes.find((node) => node.port === port);
      await stopNode(victim);
      return victim.port;
    },
    /** The port of the master serving `slot` now. */
    async masterOf(slot) {
      const alive = nodes.find((node) => node.alive);
      const master = (await clusterNodes(alive.port)).find(
        (node) => node.flags.includes('master') && !node.flags.includes('fail') && ownsSlot(node, slot),
      );
      return master.port;
    },
    /** The ports of the masters that have a replica attached (one that a failover can promote). */
    async mastersWithReplicas() {
      const alive = nodes.find((node) => node.alive);
      const view = await clusterNodes(alive.port);
      return view
        .filter((node) => node.flags.includes('master') && view.some((other) => other.master === node.id))
        .map((node) => node.port);
    },
    /** Freezes (SIGSTOP) the replicas of the master serving `slot` and cuts their links: it keeps acknowledging writes they never get. */
    async freezeReplicasOf(slot) {
      const alive = nodes.find((node) => node.alive);
      const view = await clusterNodes(alive.port);
      const master = view.find((node) => node.flags.includes('master') && ownsSlot(node, slot));
      const frozen = view.filter((node) => node.master === master.id).map((node) => node.port);
      for (const port of frozen) nodes.find((node) => node.port === port).child.kill('SIGSTOP');
      // A frozen process still receives into its socket buffer: cut the replication links too, so
      // what the master acknowledges from now on reaches no replica at all.
      await cli(master.port, 'CLIENT', 'KILL', 'TYPE', 'replica');
      return frozen;
    },
    thaw(ports) {
      for (const port of ports) nodes.find((node) => node.port === port).child.kill('SIGCONT');
    },
    /** Waits until a live node serves `slot` as master and every live node says the cluster is ok. */
    async waitForSlot(slot, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        try {
          const live = nodes.filter((node) => node.alive);
          const states = await Promise.all(live.map((node) => cli(node.port, 'CLUSTER', 'INFO')));
          const view = await clusterNodes(live[0].port);
          const master = view.find(
            (node) => node.flags.includes('master') && !node.flags.includes('fail') && ownsSlot(node, slot),
          );
          if (states.every((state) => state.includes('cluster_state:ok')) && live.some((n) => n.port === master?.port))
            return master.port;
        } catch {
          // a node still starting or failing over
        }
        if (Date.now() > deadline) throw new Error(`no live master for slot ${slot} after ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    async stop() {
      await Promise.all(nodes.map(stopNode));
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    for (let index = 0; index < masters * (1 + replicas); index += 1) {
      const port = await freeClusterPort(taken);
      taken.add(port).add(port + 10_000);
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          '--repl-diskless-sync-delay',
          '0',
          '--cluster-replica-validity-factor',
          '0',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          dir,
          '--logfile',
          join(dir, `node-${port}.log`),
        ],
        { stdio: 'ignore' },
      );
      nodes.push({ port, child, alive: true });
      // A run that dies before its teardown must not leave nodes behind.
      process.once('exit', () => child.kill('SIGKILL'));
    }
    for (const node of nodes) await waitForPing(node.port);
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
    await cluster.waitForSlot(0);
    // Every replica attached and synced, so a failover has a replica to promote.
    const deadline = Date.now() + 30_000;
    const synced = async () => {
      const roles = await Promise.all(nodes.map((node) => cli(node.port, 'INFO', 'replication')));
      const replicasUp = roles.filter((role) => role.includes('role:slave') && role.includes('master_link_status:up'));
      return replicasUp.length === masters * replicas;
    };
    while (!(await synced())) {
      if (Date.now() > deadline) throw new Error('the cluster replicas did not sync');
      await sleep(100);
    }
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

async function waitForPing(port) {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    try {
      if ((await cli(port, 'PING')) === 'PONG') return;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  throw new Error(`redis-server on ${port} did not start`);
}

async function stopNode(node) {
  if (!node.alive) return;
  node.alive = false;
  if (node.child.exitCode !== null || node.child.signalCode !== null) return;
  const exited = new Promise((resolve) => node.child.once('exit', resolve));
  node.child.kill('SIGCONT');
  node.child.kill('SIGKILL');
  await exited;
}

/** The hash slot of a key (CRC16/XMODEM of its hash tag, as Redis Cluster computes it). */
export function hashSlot(key) {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  const tagged = close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(tagged)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}
