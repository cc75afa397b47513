// A small round-robin TCP load balancer on loopback: each new connection goes to the next
// instance (HTTP keep-alive pins a client connection to one instance, as an L4 balancer does).
import { connect, createServer } from 'node:net';

export async function startRoundRobinProxy(targets, port) {
  let next = 0;
  const sockets = new Set();
  const server = createServer((client) => {
    const target = targets[next];
    next = (next + 1) % targets.length;
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
