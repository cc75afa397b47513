// Free loopback ports for the servers the tests start themselves (plain ESM: the global setup
// and the benchmark use it too).
import { createServer } from 'node:net';

export function canListen(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A port that was free a moment ago, below Linux's ephemeral range (32768-60999): a port the
 * kernel handed out (port 0) can be taken again by an outgoing connection before the server binds
 * it. `alsoFree` adds a second condition (a cluster node's bus port, at +10000).
 */
export async function freePort(taken = new Set(), alsoFree = () => Promise.resolve(true)) {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = 15_000 + Math.floor(Math.random() * 15_000);
    if (taken.has(port)) continue;
    if ((await canListen(port)) && (await alsoFree(port))) return port;
  }
  throw new Error('no free port found in 15000-29999');
}
