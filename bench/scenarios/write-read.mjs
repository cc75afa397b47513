// 4. Write then read: each of 50 connections PATCHes its own authority's label and reads it
// back at once, as a detail and (4b) as a row of a cached list page; a read that does not show
// the label just written is counted as stale.
import { ratio, startChild } from '../support.mjs';

/** The authority's label as a detail read shows it. */
const detailRead = (base, headers) => async (id) => {
  const response = await fetch(`${base}/v1/admin/authorities/${id}`, { headers });
  const body = await response.json();
  return { status: response.status, label: body.data?.label, cache: body.meta?.cache };
};

/** The authority's label as the list page holding all 50 authorities shows it (cached between writes). */
const listRead = (base, headers, userId) => async (id) => {
  const response = await fetch(`${base}/v1/admin/authorities?user_id=${userId}&sort=id:asc&page_size=50`, { headers });
  const body = await response.json();
  return { status: response.status, label: body.data?.find((row) => row.id === id)?.label, cache: body.meta?.cache };
};

/** Each connection writes its own authority's label, then reads it back with `read`. */
async function pairs(base, ids, headers, seconds, read) {
  const deadline = Date.now() + seconds * 1000;
  const counts = { done: 0, stale: 0, errors: 0, hits: 0 };
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
        const seen = await read(id);
        if (write.status !== 200 || seen.status !== 200) counts.errors += 1;
        else if (seen.label !== label) counts.stale += 1;
        if (seen.cache === 'hit') counts.hits += 1;
        counts.done += 1;
      }
    }),
  );
  return { ...counts, pairsPerSecond: Math.round(counts.done / seconds) };
}

export async function writeThenRead(ctx) {
  const headers = { authorization: `Bearer ${ctx.token}` };
  const listed = await pairs(
    ctx.serviceUrl,
    ctx.writeIds,
    headers,
    ctx.shortDuration,
    listRead(ctx.serviceUrl, headers, ctx.writeUserId),
  );
  const service = await pairs(
    ctx.serviceUrl,
    ctx.writeIds,
    headers,
    ctx.shortDuration,
    detailRead(ctx.serviceUrl, headers),
  );
  const baseline = await startChild(
    new URL('../baselines/write-read-server.mjs', import.meta.url).pathname,
    { ...ctx.env, PORT: String(ctx.ports.writeRead) },
    `http://127.0.0.1:${ctx.ports.writeRead}/health/ready`,
  );
  let base;
  try {
    const baseUrl = `http://127.0.0.1:${ctx.ports.writeRead}`;
    base = await pairs(baseUrl, ctx.writeIds, {}, ctx.shortDuration, detailRead(baseUrl, {}));
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
