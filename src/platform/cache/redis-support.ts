import type { createClient, createCluster } from '@keyv/redis';
import type { Logger } from '@nestjs/common';
import type { RedisScript } from './redis-scripts.js';

/** One line every 10 s at most: a dead node's reconnect attempts repeat the same error many times a second. */
export function throttledWarn(logger: Logger): (msg: string, error: unknown) => void {
  let last = 0;
  return (msg, error) => {
    if (Date.now() - last < 10_000) return;
    last = Date.now();
    logger.warn({ msg, err: error instanceof Error ? error.message : String(error) });
  };
}

// Commands fail at once while a node is disconnected instead of queueing without bound.
export const SOCKET = {
  connectTimeout: 1000,
  reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2000),
};

type Scripting = Pick<ReturnType<typeof createClient> | ReturnType<typeof createCluster>, 'evalSha' | 'eval'>;

/**
 * Runs a script by its SHA; a server that does not know it yet (started, restarted, flushed its
 * scripts) gets the whole text once, which loads it for the next calls.
 */
export async function runScript(
  client: Scripting,
  script: RedisScript,
  keys: readonly string[],
  args: readonly string[],
): Promise<unknown> {
  const options = { keys: [...keys], arguments: [...args] };
  try {
    return await client.evalSha(script.sha, options);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return client.eval(script.lua, options);
  }
}

export async function closeWithin(close: () => Promise<unknown>, destroy: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), 500)));
  const outcome = await Promise.race([close().then(() => 'closed' as const), gaveUp]).catch(() => 'failed' as const);
  clearTimeout(timer);
  if (outcome !== 'closed') destroy();
}
