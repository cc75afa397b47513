// `npm run bench:scim` (part 6.19): an identity provider's first sync, as Okta does it, on a
// throw-away database: for each of 10 000 users a lookup (`filter=userName eq "…"`) and a create;
// then for each of 200 groups a lookup by displayName, a create, and PATCHes adding its members
// (20 000 memberships in all, 100 per group); 10 requests at once throughout, each worker also
// looking a user up between its group writes; before it, Okta's connection test and 200 lookups
// (untimed: a running service, see WARM_UP). Prints the phases' times and the lookups' p50/p99;
// writes bench/results/scim.json.
import { startScimService, scimClient } from './scim-client.mjs';
import { load, percentile, printTable, saveResults, withClient } from './support.mjs';

const USERS = Number(process.env.BENCH_SCIM_USERS ?? 10_000);
const GROUPS = Number(process.env.BENCH_SCIM_GROUPS ?? 200);
const MEMBERS_PER_GROUP = Math.floor((USERS * 2) / GROUPS);
const CONCURRENCY = 10;
const BATCH = 100;
/** Lookups before the timed sync (see `cold`). */
const WARM_UP = 200;
const log = (line) => process.stderr.write(`[scim] ${line}\n`);
const stops = [];

try {
  const service = await startScimService('scim-idp@example.com', stops);
  const { base, headers } = service;
  const { call, pool } = scimClient(service, CONCURRENCY);
  const lookups = [];
  const lookUp = async (userName) => {
    const started = performance.now();
    const list = await call('GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`, undefined, 200);
    lookups.push(performance.now() - started);
    return list;
  };
  const userName = (i) => `user-${i}@bench.example`;
  // Okta's connection test, then lookups of users nobody has (not timed): the sync meets a running
  // service, not a process whose first requests open its pool's connections and compile its code
  // (46-58 ms for the first ten, reported apart as `cold`).
  await call('GET', '/Users?startIndex=1&count=2', undefined, 200);
  await pool(WARM_UP, (i) => lookUp(`warm-up-${i}@bench.example`));
  const cold = lookups.splice(0);
  const ids = new Array(USERS);
  const syncStarted = performance.now();
  log(`${USERS} users: a lookup and a create each, ${CONCURRENCY} at once…`);
  await pool(USERS, async (i) => {
    const found = await lookUp(userName(i));
    if (found.totalResults !== 0) throw new Error(`user ${i} already there`);
    const created = await call(
      'POST',
      '/Users',
      {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: userName(i),
        name: { givenName: 'Bench', familyName: `User ${i}` },
        emails: [{ primary: true, value: userName(i), type: 'work' }],
        externalId: `00u${i}`,
        active: true,
      },
      201,
    );
    ids[i] = created.id;
    if ((i + 1) % 2000 === 0) log(`  ${i + 1} users`);
  });
  const usersSeconds = (performance.now() - syncStarted) / 1000;
  const userLookups = lookups.length;

  log(`${GROUPS} groups with ${MEMBERS_PER_GROUP} members each (${GROUPS * MEMBERS_PER_GROUP} memberships)…`);
  const groupsStarted = performance.now();
  let patches = 0;
  await pool(GROUPS, async (g) => {
    const displayName = `Bench group ${g}`;
    const found = await call(
      'GET',
      `/Groups?excludedAttributes=members&filter=${encodeURIComponent(`displayName eq "${displayName}"`)}`,
      undefined,
      200,
    );
    if (found.totalResults !== 0) throw new Error(`group ${g} already there`);
    const group = await call(
      'POST',
      '/Groups',
      { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName, externalId: `00g${g}` },
      201,
    );
    for (let from = 0; from < MEMBERS_PER_GROUP; from += BATCH) {
      const members = [];
      for (let k = from; k < Math.min(from + BATCH, MEMBERS_PER_GROUP); k += 1)
        members.push({ value: ids[(g * MEMBERS_PER_GROUP + k) % USERS] });
      await call(
        'PATCH',
        `/Groups/${group.id}`,
        {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'add', path: 'members', value: members }],
        },
        200,
      );
      patches += 1;
      await lookUp(userName((g * 7919 + from) % USERS));
    }
  });
  const groupsSeconds = (performance.now() - groupsStarted) / 1000;
  const totalSeconds = (performance.now() - syncStarted) / 1000;
  const memberships = await withClient(service.database.url, async (client) => {
    const { rows } = await client.query('SELECT count(*)::int AS n FROM group_memberships WHERE removed_at IS NULL');
    return rows[0].n;
  });
  const round = (value) => Math.round(value * 100) / 100;
  const rows = [
    { phase: `users: ${USERS} lookups + creates`, seconds: round(usersSeconds), requests: USERS * 2 },
    {
      phase: `groups: ${GROUPS} lookups + creates, ${patches} member PATCHes`,
      seconds: round(groupsSeconds),
      requests: GROUPS * 2 + patches,
    },
    {
      phase: 'first sync in all (goal ≤ 120 s)',
      seconds: round(totalSeconds),
      requests: USERS * 2 + GROUPS * 2 + patches,
    },
  ];
  printTable(rows);
  const lookupRow = {
    lookups: lookups.length,
    'during users': userLookups,
    'p50 ms': round(percentile(lookups, 50)),
    'p99 ms (goal < 20)': round(percentile(lookups, 99)),
    'p99 ms: users / groups phase': `${round(percentile(lookups.slice(0, userLookups), 99))} / ${round(percentile(lookups.slice(userLookups), 99))}`,
    'max ms': round(Math.max(...lookups)),
    'cold: first 10 p50 / max ms': `${round(percentile(cold.slice(0, 10), 50))} / ${round(Math.max(...cold.slice(0, 10)))}`,
  };
  printTable([lookupRow]);
  log(`memberships written: ${memberships}`);
  // The same lookup with the service otherwise idle: what the sync's own writes add to it.
  const atRest = await load(`${base}/Users?filter=${encodeURIComponent(`userName eq "${userName(USERS - 1)}"`)}`, {
    headers: { authorization: headers.authorization },
    connections: CONCURRENCY,
    duration: 10,
  });
  const restRow = {
    'lookups at rest, 10 conn, req/s': atRest.rps,
    'p50 ms': atRest.p50_ms,
    'p99 ms': atRest.p99_ms,
    non2xx: atRest.non2xx,
  };
  printTable([restRow]);
  const file = saveResults('scim', {
    users: USERS,
    groups: GROUPS,
    memberships,
    concurrency: CONCURRENCY,
    phases: rows,
    lookups: lookupRow,
    atRest: restRow,
  });
  log(`written to ${file}`);
} finally {
  for (const stop of stops.reverse()) await stop().catch((error) => log(`cleanup: ${error.message}`));
}
