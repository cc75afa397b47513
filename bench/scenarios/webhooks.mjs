// 8. Webhooks: 10 000 writes (authority label PATCHes, 20 connections) on a service with job
// workers, three endpoints subscribed to authority.update on receivers on loopback that answer at
// once. Every delivery is verified with the standardwebhooks package; the lag is from the event's
// occurred_at (its transaction's start, so a little before the commit) to the receiver. The feed
// is then read from before the writes: every event once, in increasing id order.
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { percentile, startChild } from '../support.mjs';

const WRITES = Number(process.env.BENCH_WEBHOOK_WRITES ?? 10_000);
const CONNECTIONS = 20;
const ENDPOINTS = 3;

/** A receiver that verifies each delivery and notes when it came. */
async function receiver() {
  const seen = new Map(); // event id → { at, lag, count }
  let secret;
  let bad = 0;
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const at = Date.now();
      response.writeHead(200).end();
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const event = new Webhook(secret).verify(body, request.headers);
        const known = seen.get(event.id);
        if (known !== undefined) known.count += 1;
        else seen.set(event.id, { at, lag: at - Date.parse(event.occurred_at), count: 1 });
      } catch {
        bad += 1;
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    seen,
    bad: () => bad,
    setSecret: (value) => (secret = value),
    stop: () => new Promise((resolve) => server.close(resolve)),
  };
}

async function api(base, headers, method, path, body) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json().catch(() => ({}));
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** The feed of authority.update from `after` to its end. */
async function readFeed(base, headers, after) {
  const ids = [];
  let cursor = after;
  for (;;) {
    const query = `types=authority.update&limit=1000${cursor === null ? '' : `&after=${cursor}`}`;
    const page = await api(base, headers, 'GET', `/v1/admin/events?${query}`);
    ids.push(...page.data.map((event) => event.id));
    cursor = page.meta.next_after;
    if (page.data.length === 0) return { ids, next: cursor };
  }
}

export async function webhookDelivery(ctx) {
  const receivers = await Promise.all(Array.from({ length: ENDPOINTS }, receiver));
  const service = await startChild(
    new URL('../../dist/src/main.js', import.meta.url).pathname,
    {
      ...ctx.env,
      JOB_WORKERS: 'true',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_ALLOW_HTTP: 'true',
      JOBS_SCHEMA: 'bench_webhooks',
      PORT: String(ctx.ports.webhooks),
    },
    `http://127.0.0.1:${ctx.ports.webhooks}/health/ready`,
  );
  const base = `http://127.0.0.1:${ctx.ports.webhooks}`;
  const headers = { authorization: `Bearer ${ctx.token}` };
  try {
    for (const target of receivers) {
      const created = await api(base, headers, 'POST', '/v1/admin/webhook-endpoints', {
        url: target.url,
        event_types: ['authority.update'],
      });
      target.setSecret(created.data.secret);
    }
    const { next: start } = await readFeed(base, headers, null);
    // Each connection writes its own authorities, so no write waits on another's row lock.
    const started = Date.now();
    let written = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, lane) => {
        const mine = ctx.writeIds.filter((_, index) => index % CONNECTIONS === lane);
        for (let n = 0; ; n += 1) {
          if (written >= WRITES) return;
          written += 1;
          const id = mine[n % mine.length];
          await api(base, headers, 'PATCH', `/v1/admin/authorities/${id}`, { label: `hook-${lane}-${n}` });
        }
      }),
    );
    const writeSeconds = (Date.now() - started) / 1000;
    const deadline = Date.now() + 120_000;
    while (receivers.some((target) => target.seen.size < WRITES) && Date.now() < deadline) await sleep(100);
    const drained = (Date.now() - started) / 1000;
    const lags = receivers.flatMap((target) => [...target.seen.values()].map((entry) => entry.lag));
    const duplicates = receivers.reduce(
      (sum, target) => sum + [...target.seen.values()].filter((entry) => entry.count > 1).length,
      0,
    );
    const bad = receivers.reduce((sum, target) => sum + target.bad(), 0);
    const delivered = receivers.map((target) => target.seen.size);
    const feed = await readFeed(base, headers, start);
    const inOrder = feed.ids.every((id, index) => index === 0 || feed.ids[index - 1] < id);
    const sameEvents = receivers.every((target) => feed.ids.every((id) => target.seen.has(id)));
    const p99 = percentile(lags, 99);
    return [
      {
        scenario: '8 webhooks: 10 000 writes × 3 endpoints',
        metric: 'delivery lag p99 ms',
        service: p99,
        baseline: '',
        ratio: '',
        goal: '< 2000, all delivered once, feed in order',
        met:
          p99 < 2000 &&
          delivered.every((count) => count === WRITES) &&
          duplicates === 0 &&
          bad === 0 &&
          feed.ids.length === WRITES &&
          inOrder &&
          sameEvents,
        notes:
          `${WRITES} writes in ${writeSeconds.toFixed(1)} s (${Math.round(WRITES / writeSeconds)}/s), all delivered by ${drained.toFixed(1)} s; ` +
          `lag p50 ${percentile(lags, 50)} ms, max ${Math.max(...lags)} ms; delivered ${delivered.join('/')}; ` +
          `duplicates ${duplicates}, bad signatures ${bad}; feed ${feed.ids.length} events, ${inOrder ? 'in order' : 'OUT OF ORDER'}`,
      },
    ];
  } finally {
    await service.stop();
    await Promise.all(receivers.map((target) => target.stop()));
  }
}
