import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestApp } from './app.js';

/** A queue schema of the spec's own, so workers of other specs never take its jobs. */
export function jobsSchema(): string {
  return `jobs_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

/** Polls GET /jobs/{id} until the job has finished; returns the job. */
export async function waitForJob(
  t: TestApp,
  auth: string,
  jobId: string,
  timeoutMs = 20_000,
): Promise<{ state: string; [key: string]: unknown }> {
  const until = Date.now() + timeoutMs;
  let unavailable = 0;
  for (;;) {
    const response = await t.http().get(`/v1/admin/jobs/${jobId}`).set('Authorization', auth);
    // A 503 says "retry" (part 1): a poller does, as a portal would (a lookup can wait past
    // DB_CONNECT_TIMEOUT_MS for a connection on a machine busy with two test runs). At once: the
    // 503 itself took that long.
    if (response.status === 503 && (unavailable += 1) <= 3) continue;
    if (response.status !== 200)
      throw new Error(`GET /jobs/${jobId} answered ${response.status}: ${JSON.stringify(response.body)}`);
    const job = response.body.data as { state: string };
    if (job.state === 'succeeded' || job.state === 'failed') return job;
    if (Date.now() > until) throw new Error(`job ${jobId} still ${job.state} after ${timeoutMs} ms`);
    await sleep(200);
  }
}
