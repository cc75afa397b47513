// `npm run scale:local`: a Redis Cluster (3 masters, 3 replicas) and a PostgreSQL primary with a
// streaming replica, all on free loopback ports in temporary directories, to try Scaling out on
// one machine. It prints the settings to start instances with, and stops everything on Ctrl-C.
import { PrimaryWithReplica } from '../test/support/pg-replica.mjs';
import { startRedisCluster } from '../test/support/redis-cluster.mjs';

const say = (line) => process.stderr.write(`${line}\n`);
say('starting a Redis Cluster (3 masters + 3 replicas) and a PostgreSQL primary with a streaming replica…');
const [cluster, servers] = await Promise.all([startRedisCluster(), PrimaryWithReplica.start()]);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  say('stopping the cluster and both PostgreSQL servers…');
  await Promise.allSettled([cluster.stop(), servers.stop()]);
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
try {
  await servers.createDatabase('admin_api');
} catch (error) {
  say(`could not create the database: ${error.message}`);
  await stop();
}
const env = {
  DATABASE_URL: servers.url('admin_api', 'primary'),
  DATABASE_READ_URLS: servers.url('admin_api', 'replica'),
  REDIS_URL: cluster.url,
  JWT_SECRET: 'local-scale-secret-0123456789abcdef',
};
// stdout carries only the settings, so `eval "$(…)"`-style use works; the rest goes to stderr.
for (const [name, value] of Object.entries(env)) process.stdout.write(`export ${name}='${value}'\n`);
say(`
Ready. In another shell, paste the export lines above, then start instances on their own ports:
  PORT=3001 npm start        # the first one applies the migrations
  PORT=3002 npm start
  npm run cli -- bootstrap-admin --email you@example.com    # a token, valid on both
curl http://127.0.0.1:3001/health/ready shows the cache (redis cluster) and the replica's reads.
Ctrl-C here stops the cluster and both PostgreSQL servers (their files are removed).`);
