import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { signToken } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { createOwnDatabase } from '../support/own-database.js';
import { check, type Components, type Schema } from '../support/schema-check.js';
import { body, listQuery, pathValue, valid } from './request-arbitraries.js';

/*
 * A property-based fuzzer driven by the committed openapi.json: for every operation it derives
 * requests from the documented parameters and body schema, mutates them, sends them, and checks
 * that no answer is a 5xx and that every answer matches what the document says for its status.
 * CI runs FUZZ_RUNS (default 200) cases per operation with a fixed seed; `npm run fuzz` runs more.
 */
interface Operation {
  parameters?: { name: string; in: 'path' | 'query'; required?: boolean; schema: Schema }[];
  requestBody?: { content: { 'application/json': { schema: Schema } } };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Components };
}

const document = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')) as OpenApi;
const components = document.components.schemas;
const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_121);
const OPERATIONS = Object.entries(document.paths).flatMap(([path, operations]) =>
  Object.entries(operations).map(([method, operation]) => ({
    name: `${method.toUpperCase()} ${path}`,
    method,
    path,
    operation,
  })),
);

interface Sent {
  readonly status: number;
  readonly text: string;
  readonly body: unknown;
}

// Rows with small ids for the fuzzer to hit; the two callers get ids it never generates.
const SEED_SQL = `
  INSERT INTO users (email, display_name, role_id, status_id) SELECT 'u' || g || '@fuzz.example.com', 'Fuzz ' || g, 1 + g % 5, 1 + g % 3 FROM generate_series(1, 40) g;
  INSERT INTO users (id, email, display_name, role_id, status_id) VALUES (1000, 'root@fuzz.example.com', 'Root', 1, 2), (1001, 'viewer@fuzz.example.com', 'Viewer', 4, 2);
  INSERT INTO devices (serial_number, name) SELECT 'FZ-' || g, 'Device ' || g FROM generate_series(1, 20) g;
  INSERT INTO authorities (device_id, user_id) SELECT 1 + g % 20, g FROM generate_series(1, 40) g;
  INSERT INTO authority_permissions (authority_id, permission_id) SELECT g, 13 FROM generate_series(1, 20) g;
  INSERT INTO inbox_messages (user_id, type, title, body) SELECT 1 + g % 40, 'notice', 'Title ' || g, 'Body' FROM generate_series(1, 40) g;
  INSERT INTO message_read_state (message_id, user_id) SELECT id, user_id FROM inbox_messages;
  INSERT INTO mobile_devices (user_id, platform, push_token) SELECT 1 + g % 40, 'ios', 'fuzz-token-' || g FROM generate_series(1, 20) g;`;

describe('contract fuzzer (openapi.json)', () => {
  let t: TestApp;
  let database: Awaited<ReturnType<typeof createOwnDatabase>>;
  const callers: Record<string, string> = {};
  beforeAll(async () => {
    // Its own database and an in-process cache: it writes to arbitrary ids, which must not be other specs' rows.
    database = await createOwnDatabase('fuzz');
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await client.query(SEED_SQL);
      for (const [name, userId] of [
        ['root', 1000],
        ['viewer', 1001],
      ] as const) {
        const session = (
          await client.query<{ id: string }>(
            "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id",
            [userId],
          )
        ).rows[0];
        callers[name] = `Bearer ${signToken({ sub: String(userId), sid: session?.id })}`;
      }
    } finally {
      await client.end();
    }
    t = await startApp({
      widgets: false,
      databaseUrl: database.url,
      redisUrl: null,
      env: { RATE_LIMIT_PER_MINUTE: '1000000' },
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  it.each(OPERATIONS)(
    '$name: never a 5xx, always the documented shape',
    async ({ method, path, operation }) => {
      const pathParams = (operation.parameters ?? []).filter((parameter) => parameter.in === 'path');
      const queryParams = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query');
      // Documented parameters, valid or mangled; on list routes also the generic list probes (bad
      // pages, unknown sort fields, parameters the route does not take).
      const documented = fc.record(
        Object.fromEntries(
          queryParams.map((parameter) => [
            parameter.name,
            fc.oneof(valid(parameter.schema, components).map(String), fc.string({ maxLength: 12 })),
          ]),
        ),
        { requiredKeys: [] },
      );
      const isList = queryParams.some((parameter) => parameter.name === 'page_size');
      const request = fc.record({
        params: fc.tuple(...pathParams.map(() => pathValue)),
        query: isList ? fc.oneof(documented, listQuery) : documented,
        body: body(operation.requestBody?.content['application/json'].schema, components),
        as: fc.constantFrom('root', 'root', 'root', 'viewer'),
      });
      await fc.assert(
        fc.asyncProperty(request, async ({ params, query, body: payload, as }) => {
          let url = path;
          pathParams.forEach(
            (parameter, index) => (url = url.replace(`{${parameter.name}}`, encodeURIComponent(params[index] ?? ''))),
          );
          const sent = await send(t, method, url, query as Record<string, string>, payload, callers[as] ?? '');
          const problems = conformance(operation, sent);
          if (problems.length > 0)
            throw new Error(
              `${method.toUpperCase()} ${url} → ${sent.status}: ${problems.slice(0, 5).join('; ')}\n${sent.text.slice(0, 500)}`,
            );
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    },
    300_000,
  );
});

async function send(
  t: TestApp,
  method: string,
  url: string,
  query: Record<string, string>,
  payload: unknown,
  auth: string,
): Promise<Sent> {
  const http = t.http();
  const base =
    method === 'get'
      ? http.get(url)
      : method === 'delete'
        ? http.delete(url)
        : method === 'patch'
          ? http.patch(url)
          : method === 'put'
            ? http.put(url)
            : http.post(url);
  const request = base.query(query).set('Authorization', auth);
  const response =
    method === 'post' || method === 'patch' || method === 'put'
      ? await request.set('Content-Type', 'application/json').send(JSON.stringify(payload))
      : await request;
  // supertest parses only application/json; SCIM answers application/scim+json (part 6.19).
  const scimJson = /^application\/scim\+json/.test(String(response.headers['content-type'])) && response.text !== '';
  return {
    status: response.status,
    text: response.text,
    body: scimJson ? (JSON.parse(response.text) as unknown) : (response.body as unknown),
  };
}

function conformance(operation: Operation, sent: Sent): string[] {
  if (sent.status >= 500) return [`server error ${sent.status}`];
  const documented = operation.responses[String(sent.status)];
  if (documented === undefined)
    return [`status ${sent.status} is not documented (documented: ${Object.keys(operation.responses).join(', ')})`];
  if (sent.status === 204) return sent.text === '' ? [] : ['204 with a body'];
  // The documented media type: JSON, or SCIM's (part 6.19).
  const schema = Object.values(documented.content ?? {})[0]?.schema;
  return schema === undefined ? [] : check(schema, sent.body, components);
}
