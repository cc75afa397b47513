// The global setup of the `redis-cluster` project: a Redis Cluster of this run's own (3 masters,
// 3 replicas) that its specs use as TEST_REDIS_URL. It also makes the run's database when the
// main project is not part of this run (its setup makes it otherwise).
import globalSetup from './global-setup.mjs';
import { startRedisCluster } from './redis-cluster.mjs';

export default async function clusterSetup() {
  if (process.env.ADMIN_API_TEST_DATABASE_URL === undefined) {
    await globalSetup();
    globalThis.__adminApiClusterOwnsDatabase = true;
  }
  const cluster = await startRedisCluster();
  globalThis.__adminApiRedisCluster = cluster;
  process.env.ADMIN_API_TEST_REDIS_CLUSTER_URL = cluster.url;
}
