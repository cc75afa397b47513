// 7. A heavy bulk as a job: 100 000 items with `Prefer: respond-async` on an instance running the
// job workers, from the POST to the job's success, against the same statements sent through raw pg
// in 100 transactions of 1000 (scenario 3's raw side). The worker's memory is sampled throughout.
import pg from 'pg';
import { clearInterval, setInterval } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import { ratio, rssMb, startChild } from '../support.mjs';
import { rawBulkGrant } from './bulk.mjs';

const ITEMS = 100_000;

async function authoritiesOf(client, userIds) {
  const { rows } = await client.query('SELECT id FROM authorities WHERE user_id = ANY($1::bigint[]) ORDER BY id', [
    userIds,
  ]);
  return rows.map((row) => Number(row.id)).slice(0, ITEMS);
}

export async function heavyBulk(ctx) {
  const client = new pg.Client({ connectionString: ctx.databaseUrl });
  await client.connect();
  const worker = await startChild(
    new URL('../../dist/src/main.js', import.meta.url).pathname,
    { ...ctx.env, JOB_WORKERS: 'true', PORT: String(ctx.ports.heavyBulk) },
    `http://127.0.0.1:${ctx.ports.heavyBulk}/health/ready`,
  );
  try {
    const serviceIds = await authoritiesOf(client, ctx.heavyBulkHolders.service);
    const rawIds = await authoritiesOf(client, ctx.heavyBulkHolders.raw);
    if (serviceIds.length < ITEMS || rawIds.length < ITEMS) throw new Error('not enough authorities for 100 000 items');
    const base = `http://127.0.0.1:${ctx.ports.heavyBulk}`;
    const headers = { authorization: `Bearer ${ctx.token}` };
    const memory = [];
    const sampler = setInterval(() => memory.push(rssMb(worker.pid)), 250);
    const started = performance.now();
    const accepted = await fetch(`${base}/v1/admin/authority-permissions/bulk-grant`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', prefer: 'respond-async' },
      body: JSON.stringify({ items: serviceIds.map((id) => ({ authority_id: id, permission_id: 9 })) }),
    });
    const acceptedBody = await accepted.json();
    if (accepted.status !== 202) throw new Error(`the heavy bulk answered ${accepted.status}`);
    const acceptedMs = performance.now() - started;
    const atAccept = rssMb(worker.pid);
    let job;
    for (;;) {
      job = (await (await fetch(`${base}/v1/admin/jobs/${acceptedBody.data.job_id}`, { headers })).json()).data;
      if (job.state === 'succeeded' || job.state === 'failed') break;
      await sleep(250);
    }
    const serviceMs = Math.round(performance.now() - started);
    clearInterval(sampler);
    if (job.state !== 'succeeded' || job.result.processed !== ITEMS)
      throw new Error(`the heavy bulk job ended ${job.state}: ${JSON.stringify(job.result ?? job.error)}`);
    const rawStarted = performance.now();
    for (let offset = 0; offset < ITEMS; offset += 1000)
      await rawBulkGrant(client, rawIds.slice(offset, offset + 1000), 9);
    const rawMs = Math.round(performance.now() - rawStarted);
    const r = ratio(serviceMs, rawMs);
    // Flat: the job's second half peaks no higher than its first (nothing accumulates per item).
    const running = memory.slice(Math.floor((acceptedMs / serviceMs) * memory.length));
    const half = Math.floor(running.length / 2);
    const firstPeak = Math.max(...running.slice(0, half));
    const secondPeak = Math.max(...running.slice(half));
    return [
      {
        scenario: '7 bulk job, 100 000 items',
        metric: 'ms, POST to succeeded',
        service: serviceMs,
        baseline: rawMs,
        ratio: r,
        goal: '<= 2x',
        met: r <= 2,
        notes: `202 in ${Math.round(acceptedMs)} ms; 100 chunks of 1000, each one transaction with its results`,
      },
      {
        scenario: '7 memory during the job',
        metric: 'RSS MB at 202 / peak 1st half / peak 2nd half',
        service: `${atAccept} / ${firstPeak} / ${secondPeak}`,
        baseline: '',
        ratio: '',
        goal: 'flat',
        met: secondPeak - firstPeak <= 25,
        notes: 'flat: the second half of the job peaks at most 25 MB above the first (nothing held per item)',
      },
    ];
  } finally {
    await worker.stop();
    await client.end();
  }
}
