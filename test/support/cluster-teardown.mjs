import globalTeardown from './global-teardown.mjs';

export default async function clusterTeardown() {
  await globalThis.__adminApiRedisCluster?.stop();
  if (globalThis.__adminApiClusterOwnsDatabase === true) await globalTeardown();
}
