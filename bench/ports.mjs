import { createServer } from 'node:net';

function canListen(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port that was free a moment ago, below Linux's ephemeral range (see test/support/redis-server.ts). */
export async function freePort() {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const port = 15_000 + Math.floor(Math.random() * 15_000);
    if (await canListen(port)) return port;
  }
  throw new Error('no free port found in 15000-29999');
}
