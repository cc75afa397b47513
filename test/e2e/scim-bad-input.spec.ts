import { randomUUID } from 'node:crypto';
import { actor, type Caller } from '../support/auth.js';
import { startApp, useApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { body, scim, scimError } from '../support/scim.js';

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const q = (filter: string): string => encodeURIComponent(filter);

/** Counts of what the actor wrote (the database is shared with other specs): users, groups, audit events. */
async function footprint(actorId: number): Promise<number[]> {
  const rows = await sql<{ users: number; groups: number; audit: number }>(
    `SELECT (SELECT count(*)::int FROM users WHERE created_by = $1) AS users,
        (SELECT count(*)::int FROM groups WHERE created_by = $1) AS groups,
        (SELECT count(*)::int FROM audit_events WHERE actor_id = $1) AS audit`,
    [actorId],
  );
  return [rows[0]?.users ?? -1, rows[0]?.groups ?? -1, rows[0]?.audit ?? -1];
}

describe('SCIM bad input: every scimType, hostile filters, sizes; never a 500, never a partial write (part 6.19)', () => {
  const app = useApp({ widgets: false });
  let idp: Caller;
  let userId = '';
  let version = '';
  beforeAll(async () => {
    idp = await actor('super_admin');
    const created = await scim(app.t, idp)
      .post('/Users', { userName: `bad-${randomUUID()}@x.co` })
      .expect(201);
    userId = body(created).id as string;
    version = created.headers.etag as string;
  });

  it('each scimType of the contract, with the SCIM error schema and media type', async () => {
    const cases: [
      string,
      () => Promise<{ status: number; text: string; headers: Record<string, string> }>,
      number,
      string | undefined,
    ][] = [
      ['invalidFilter', () => scim(app.t, idp).get(`/Users?filter=${q('userName zz "a"')}`), 400, 'invalidFilter'],
      [
        'invalidSyntax',
        () =>
          app.t
            .http()
            .post('/scim/v2/Users')
            .set('Authorization', idp.auth)
            .set('Content-Type', 'application/scim+json')
            .send('{"userName": '),
        400,
        'invalidSyntax',
      ],
      [
        'invalidPath',
        () =>
          scim(app.t, idp).patch(`/Users/${userId}`, {
            schemas: [PATCH],
            Operations: [{ op: 'add', path: 'emails[type eq "work"', value: 'x' }],
          }),
        400,
        'invalidPath',
      ],
      ['invalidValue', () => scim(app.t, idp).post('/Users', { displayName: 'No user name' }), 400, 'invalidValue'],
      [
        'noTarget',
        () => scim(app.t, idp).patch(`/Users/${userId}`, { schemas: [PATCH], Operations: [{ op: 'remove' }] }),
        400,
        'noTarget',
      ],
      [
        'mutability',
        () =>
          scim(app.t, idp).patch(`/Users/${userId}`, {
            schemas: [PATCH],
            Operations: [{ op: 'replace', path: 'id', value: '1' }],
          }),
        400,
        'mutability',
      ],
      [
        'mutability (PUT of another id)',
        () => scim(app.t, idp).put(`/Users/${userId}`, { id: '1', userName: 'x@y.co' }),
        400,
        'mutability',
      ],
      [
        '412',
        () =>
          scim(app.t, idp)
            .patch(`/Users/${userId}`, {
              schemas: [PATCH],
              Operations: [{ op: 'replace', path: 'displayName', value: 'x' }],
            })
            .set('If-Match', 'W/"999999"'),
        412,
        undefined,
      ],
      ['404', () => scim(app.t, idp).get('/Groups/not-a-number'), 404, undefined],
      [
        '415',
        () =>
          app.t
            .http()
            .post('/scim/v2/Users')
            .set('Authorization', idp.auth)
            .set('Content-Type', 'text/plain')
            .send('userName=x'),
        415,
        undefined,
      ],
    ];
    const before = await footprint(idp.user.id);
    for (const [name, send, status, scimType] of cases) {
      const response = await send();
      expect([name, response.status, body(response as never)]).toEqual([name, status, scimError(status, scimType)]);
      expect(response.headers['content-type']).toMatch(/^application\/scim\+json/);
    }
    expect(await footprint(idp.user.id)).toEqual(before);
    // The version the 412 named is still the current one: nothing changed.
    const current = await scim(app.t, idp).get(`/Users/${userId}`).expect(200);
    expect(current.headers.etag).toBe(version);
  });

  it('If-Match with the current weak ETag writes; the ETag moves on and equals meta.version', async () => {
    const current = await scim(app.t, idp).get(`/Users/${userId}`).expect(200);
    const written = await scim(app.t, idp)
      .patch(`/Users/${userId}`, {
        schemas: [PATCH],
        Operations: [{ op: 'replace', path: 'displayName', value: 'Matched' }],
      })
      .set('If-Match', current.headers.etag as string)
      .expect(200);
    expect(written.headers.etag).not.toBe(current.headers.etag);
    expect((body(written).meta as { version: string }).version).toBe(written.headers.etag);
    version = written.headers.etag as string;
  });

  it('hostile filters are 400 invalidFilter: deep nesting, hundreds of or terms, injection, unknown attributes, a NUL', async () => {
    const filters = [
      `${'('.repeat(200)}userName eq "a"${')'.repeat(200)}`,
      Array.from({ length: 400 }, (_, i) => `id eq "${i}"`)
        .join(' or ')
        .slice(0, 4000),
      `userName eq "a" or 1=1 --`,
      `userName eq "x") OR (1=1`,
      `password eq "secret"`,
      `urn:evil:schema:userName eq "a"`,
      `userName eq "a\u0000b"`,
      `emails[value eq "a"`,
    ];
    for (const filter of filters) {
      const response = await scim(app.t, idp).get(`/Users?filter=${q(filter)}`);
      expect([filter.slice(0, 30), response.status, body(response)]).toEqual([
        filter.slice(0, 30),
        400,
        scimError(400, 'invalidFilter'),
      ]);
    }
    // A value with quotes and LIKE wildcards is a value, bound: it matches nothing here.
    const quoted = await scim(app.t, idp)
      .get(`/Users?filter=${q(`userName co "%' OR '1'='1"`)}`)
      .expect(200);
    expect(body(quoted)).toMatchObject({ totalResults: 0 });
    const wild = await scim(app.t, idp)
      .get(`/Users?filter=${q('userName sw "%"')}`)
      .expect(200);
    expect(body(wild)).toMatchObject({ totalResults: 0 });
  });

  it('startIndex and count out of range are read as the RFC says; attributes select; a non-integer is invalidValue', async () => {
    const page = body(await scim(app.t, idp).get('/Users?startIndex=0&count=1000').expect(200));
    expect(page).toMatchObject({ startIndex: 1 });
    expect((page.Resources as unknown[]).length).toBeLessThanOrEqual(100);
    const none = body(await scim(app.t, idp).get('/Users?count=-5').expect(200));
    expect(none).toMatchObject({ itemsPerPage: 0, Resources: [] });
    expect(body(await scim(app.t, idp).get('/Users?count=ten').expect(400))).toEqual(scimError(400, 'invalidValue'));
    const selected = body(
      await scim(app.t, idp).get(`/Users/${userId}?attributes=userName,name.givenName`).expect(200),
    );
    expect(Object.keys(selected).sort()).toEqual(['id', 'schemas', 'userName']);
    const excluded = body(await scim(app.t, idp).get(`/Users/${userId}?excludedAttributes=groups,meta`).expect(200));
    expect(excluded).not.toHaveProperty('groups');
    expect(excluded).not.toHaveProperty('meta');
  });

  it('bodies at and over 1 MiB: over is 413 in the SCIM schema, nothing written', async () => {
    const before = await footprint(idp.user.id);
    const over = await app.t
      .http()
      .post('/scim/v2/Users')
      .set('Authorization', idp.auth)
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ userName: `big-${randomUUID()}@x.co`, title: 'x'.repeat(1_048_576) }));
    expect([over.status, body(over)]).toEqual([413, scimError(413)]);
    const at = JSON.stringify({ userName: `big-${randomUUID()}@x.co`, title: '' });
    const padded = at.replace('"title":""', `"title":"${'x'.repeat(1_048_576 - Buffer.byteLength(at))}"`);
    expect(Buffer.byteLength(padded)).toBe(1_048_576);
    const fits = await app.t
      .http()
      .post('/scim/v2/Users')
      .set('Authorization', idp.auth)
      .set('Content-Type', 'application/scim+json')
      .send(padded);
    expect(fits.status).toBe(201);
    const after = await footprint(idp.user.id);
    expect(after[0]).toBe((before[0] ?? 0) + 1);
    expect(after[2]).toBe((before[2] ?? 0) + 2); // user.create and user.activate of the one that fit
  });

  it('a PATCH whose last operation fails writes nothing of the earlier ones', async () => {
    const before = await sql<{ display_name: string; version: number }>(
      'SELECT display_name, version FROM users WHERE id = $1',
      [userId],
    );
    await scim(app.t, idp)
      .patch(`/Users/${userId}`, {
        schemas: [PATCH],
        Operations: [
          { op: 'replace', path: 'displayName', value: 'Should not stay' },
          { op: 'replace', path: 'emails[type eq "work"].value', value: 'not-an-email' },
        ],
      })
      .expect(400);
    expect(await sql('SELECT display_name, version FROM users WHERE id = $1', [userId])).toEqual(before);
  });

  it('a PATCH that changes nothing answers 200 (or 204 with Prefer: return=minimal) and writes nothing', async () => {
    const current = body(await scim(app.t, idp).get(`/Users/${userId}`).expect(200));
    const [{ count: events } = { count: 0 }] = await sql<{ count: number }>(
      "SELECT count(*)::int AS count FROM audit_events WHERE resource_type = 'user' AND resource_id = $1",
      [userId],
    );
    const same = { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: current.displayName }] };
    const answered = await scim(app.t, idp).patch(`/Users/${userId}`, same).expect(200);
    expect(answered.headers.etag).toBe(version);
    await scim(app.t, idp).patch(`/Users/${userId}`, same).set('Prefer', 'return=minimal').expect(204);
    const [{ count: after } = { count: 0 }] = await sql<{ count: number }>(
      "SELECT count(*)::int AS count FROM audit_events WHERE resource_type = 'user' AND resource_id = $1",
      [userId],
    );
    expect(after).toBe(events);
  });

  it('application/scim+json is SCIM’s alone: an admin route refuses it with 415', async () => {
    const refused = await app.t
      .http()
      .post('/v1/admin/users')
      .set('Authorization', idp.auth)
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ email: `x-${randomUUID()}@y.co`, display_name: 'X', role_id: 4 }));
    expect(refused.status).toBe(415);
    expect(refused.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });
});

describe('SCIM: 429 with Retry-After in the SCIM schema', () => {
  let t: TestApp;
  let idp: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, env: { RATE_LIMIT_PER_MINUTE: '3' } });
    idp = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('the per-actor limit', async () => {
    let limited: { status: number; text: string; headers: Record<string, string> } | undefined;
    for (let i = 0; i < 6 && limited === undefined; i += 1) {
      const response = await scim(t, idp).get('/Users?count=1');
      if (response.status === 429) limited = response;
    }
    expect(limited).toBeDefined();
    expect(body(limited as never)).toEqual(scimError(429));
    expect(Number(limited?.headers['retry-after'])).toBeGreaterThan(0);
  });
});
