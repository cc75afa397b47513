// 4. Write then read: each of 50 connections PATCHes its own authority's label and reads it
// back at once, as a detail and (4b) as a row of a cached list page; a read that does not show
// the label just written is counted as stale.
import { ratio, startChild } from '../support.mjs';

async function pairs(base, ids, headers, seconds) {
  const deadline = Date.now() + seconds * 1000;
  let done = 0;
  let stale = 0;
  let errors = 0;
  await Promise.all(
    ids.map(async (id, worker) => {
      for (let n = 0; Date.now() < deadline; n += 1) {
        const label = `w${worker}-${n}`;
        const write = await fetch(`${base}/v1/admin/authorities/${id}`, {
          method: 'PATCH',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ label }),
        });
        await write.arrayBuffer();
        const readBack = await fetch(`${base}/v1/admin/authorities/${id}`, { headers });
        const body = await readBack.json();
        if (write.status !== 200 || readBack.status !== 200) errors += 1;
        else if (body.data.label !== label) stale += 1;
        done += 1;
      }
    }),
  );
  return { pairsPerSecond: Math.round(done / seconds), stale, errors };
}

/** Like `pairs`, but the read is the list page holding all 50 authorities (cached between writes). */
async function listPairs(base, ids, userId, headers, seconds) {
  const deadline = Date.now() + seconds * 1000;
  let done = 0;
  let stale = 0;
  let errors = 0;
  let hits = 0;
  await Promise.all(
    ids.map(async (id, worker) => {
      for (let n = 0; Date.now() < deadline; n += 1) {
        const label = `l${worker}-${n}`;
        const write = await fetch(`${base}/v1/admin/authorities/${id}`, {
          method: 'PATCH',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ label }),
        });
        await write.arrayBuffer();
        const page = await fetch(`${base}/v1/admin/authorities?user_id=${userId}&sort=id:asc&page_size=50`, {
          headers,
        });
        const body = await page.json();
        if (write.status !== 200 || page.status !== 200) errors += 1;
        else if (body.data.find((row) => row.id === id)?.label !== label) stale += 1;
        if (body.meta?.cache === 'hit') hits += 1;
        done += 1;
      }
    }),
  );
  return { pairsPerSecond: Math.round(done / seconds), stale, errors, hits, done };
}

export async function writeThenRead(ctx) {
  const headers = { authorization: `Bearer ${ctx.token}` };
  const listed = await listPairs(ctx.serviceUrl, ctx.writeIds, ctx.writeUserId, headers, ctx.shortDuration);
  const service = await pairs(ctx.serviceUrl, ctx.writeIds, headers, ctx.shortDuration);
  const baseline = await startChild(
    new URL('../baselines/write-read-server.mjs', import.meta.url).pathname,
    { ...ctx.env, PORT: String(ctx.ports.writeRead) },
    `http://127.0.0.1:${ctx.ports.writeRead}/health/ready`,
  );
  let base;
  try {
    base = await pairs(`http://127.0.0.1:${ctx.ports.writeRead}`, ctx.writeIds, {}, ctx.shortDuration);
  } finally {
    await baseline.stop();
  }
  const r = ratio(service.pairsPerSecond, base.pairsPerSecond);
  return [
    {
      scenario: '4 PATCH then GET (50 conn)',
      metric: 'pairs/s',
      service: service.pairsPerSecond,
      baseline: base.pairsPerSecond,
      ratio: r,
      goal: '>= 0.60, 0 stale',
      met: r >= 0.6 && service.stale === 0 && service.errors === 0,
      notes: `stale reads: service ${service.stale}, baseline ${base.stale}; errors ${service.errors}`,
    },
    {
      scenario: '4b PATCH then list page (50 conn)',
      metric: 'pairs/s',
      service: listed.pairsPerSecond,
      baseline: '',
      ratio: '',
      goal: '0 stale pages',
      met: listed.stale === 0 && listed.errors === 0,
      notes: `stale pages ${listed.stale} of ${listed.done}; ${listed.hits} served from the cache; errors ${listed.errors}`,
    },
  ];
}
