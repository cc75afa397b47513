// 2. Lists over 1 000 000 authorities: filter user_id or is_active, sort created_at:desc, pages
// 1 and 200, 10 connections. Uncached pages: a second instance with LIST_CACHE=false against a
// bare node:http + pg route running the same SQL. Cached: the repeated page on the main instance
// against the same page uncached.
import { load, ratio, startChild } from '../support.mjs';

export async function lists(ctx) {
  const baseline = await startChild(
    new URL('../baselines/list-server.mjs', import.meta.url).pathname,
    { ...ctx.env, PORT: String(ctx.ports.list) },
    `http://127.0.0.1:${ctx.ports.list}/health/ready`,
  );
  const uncached = await startChild(
    new URL('../../dist/src/main.js', import.meta.url).pathname,
    { ...ctx.env, LIST_CACHE: 'false', PORT: String(ctx.ports.listUncached) },
    `http://127.0.0.1:${ctx.ports.listUncached}/health/ready`,
  );
  const uncachedUrl = `http://127.0.0.1:${ctx.ports.listUncached}`;
  const headers = { authorization: `Bearer ${ctx.token}` };
  const rows = [];
  try {
    // The repeated page: served from the cache after its first read.
    const repeated = `user_id=${ctx.holderId}&sort=created_at:desc&page=1`;
    const first = await (await fetch(`${ctx.serviceUrl}/v1/admin/authorities?${repeated}`, { headers })).json();
    const hit = await (await fetch(`${ctx.serviceUrl}/v1/admin/authorities?${repeated}`, { headers })).json();
    if (first.meta?.cache !== 'miss' && first.meta?.cache !== 'hit')
      throw new Error(`no meta.cache: ${JSON.stringify(first.meta)}`);
    if (hit.meta?.cache !== 'hit') throw new Error(`repeated page was not a hit: ${JSON.stringify(hit.meta)}`);
    const cachedLoad = await load(`${ctx.serviceUrl}/v1/admin/authorities?${repeated}`, {
      headers,
      connections: 10,
      duration: ctx.shortDuration,
    });
    const uncachedLoad = await load(`${uncachedUrl}/v1/admin/authorities?${repeated}`, {
      headers,
      connections: 10,
      duration: ctx.shortDuration,
    });
    const cachedRatio = ratio(cachedLoad.rps, uncachedLoad.rps);
    rows.push({
      scenario: '2 list repeated page, cached (10 conn)',
      metric: 'req/s',
      service: cachedLoad.rps,
      baseline: uncachedLoad.rps,
      ratio: cachedRatio,
      goal: '>= 5 (against the same page uncached)',
      met: cachedRatio >= 5,
      notes: `p99 ${cachedLoad.p99_ms} ms vs ${uncachedLoad.p99_ms} ms uncached`,
    });
    for (const [label, query] of [
      ['user_id, page 1', `user_id=${ctx.holderId}&sort=created_at:desc&page=1`],
      ['user_id, page 200', `user_id=${ctx.holderId}&sort=created_at:desc&page=200`],
      ['is_active, page 1', 'is_active=true&sort=created_at:desc&page=1'],
      ['is_active, page 200', 'is_active=true&sort=created_at:desc&page=200'],
    ]) {
      const serviceUrl = `${uncachedUrl}/v1/admin/authorities?${query}`;
      const check = await (await fetch(serviceUrl, { headers })).json();
      if (check.data?.length !== 25) throw new Error(`list ${label} returned ${JSON.stringify(check).slice(0, 200)}`);
      const service = await load(serviceUrl, { headers, connections: 10, duration: ctx.shortDuration });
      const base = await load(`http://127.0.0.1:${ctx.ports.list}/v1/admin/authorities?${query}`, {
        connections: 10,
        duration: ctx.shortDuration,
      });
      const r = ratio(service.rps, base.rps);
      const p99Goal = label.endsWith('page 1') ? service.p99_ms < 50 : true;
      rows.push({
        scenario: `2 list ${label}, uncached (10 conn)`,
        metric: 'req/s',
        service: service.rps,
        baseline: base.rps,
        ratio: r,
        goal: label.endsWith('page 1') ? '>= 0.75, p99 < 50 ms' : '>= 0.75',
        met: r >= 0.75 && p99Goal,
        notes: `p99 ${service.p99_ms} ms vs ${base.p99_ms} ms; total ${check.meta.total} (exact: ${check.meta.total_exact})`,
      });
    }
  } finally {
    await uncached.stop();
    await baseline.stop();
  }
  return rows;
}
