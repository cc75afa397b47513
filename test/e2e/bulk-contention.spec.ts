import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { createUser, permissionId } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { table } from '../../src/platform/database/table.js';

const USERS = table('users');

const CODES = ['devices.read', 'devices.update', 'authorities.read', 'authorities.update', 'authorities.deactivate'];
const CONCURRENT = 16;
const ROUNDS = 8;

interface Item {
  readonly authority_id: number;
  readonly permission_id: number;
}

interface Sent {
  readonly mode: 'grant' | 'revoke';
  readonly items: readonly Item[];
  readonly status: number;
  readonly requestId: string;
  readonly results: readonly { status: string; authority_id: number; permission_id: number }[];
}

/** A random, shuffled subset of the pairs (a pair may repeat, as clients send it). */
function pick(pairs: readonly Item[]): Item[] {
  const chosen = pairs.filter(() => Math.random() < 0.4);
  for (let index = chosen.length - 1; index > 0; index -= 1) {
    const other = Math.floor(Math.random() * (index + 1));
    [chosen[index], chosen[other]] = [chosen[other] as Item, chosen[index] as Item];
  }
  return chosen.length === 0 ? [pairs[0] as Item] : chosen;
}

describe('overlapping bulk grants and revokes (part 6.6): no deadlock reaches a client', () => {
  // Sixteen bulks at once on the suite's five pooled connections: on a loaded machine one may wait
  // past the 2 s a request waits for a connection (a 503 this spec is not about: a CI run met it
  // with a benchmark running beside the suite). The wait is lengthened; deadlocks are still retried.
  const app = useApp({ widgets: false, env: { DB_CONNECT_TIMEOUT_MS: '30000' } });

  it('a storm of 16 concurrent bulks, 8 times over, answers 200 every time and ends as a serial replay', async () => {
    const owner = await createUser({ role: 'operator' });
    const authorities: number[] = [];
    for (let index = 0; index < 10; index += 1) {
      const device = await createDevice({ ownerId: owner.id });
      authorities.push(await createAuthority(device.id, (await createUser({ role: 'operator' })).id));
    }
    const pairs = authorities.flatMap((authority_id) =>
      CODES.map((code) => ({ authority_id, permission_id: permissionId(code) })),
    );
    const sent: Sent[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const batch = await Promise.all(
        Array.from({ length: CONCURRENT }, async (): Promise<Sent> => {
          const mode = Math.random() < 0.5 ? 'grant' : 'revoke';
          const items = pick(pairs);
          const response = await app.t
            .http()
            .post(`/v1/admin/authority-permissions/bulk-${mode}`)
            .set('Authorization', app.root.auth)
            .send({ items });
          return {
            mode,
            items,
            status: response.status,
            requestId: String(response.headers['x-request-id']),
            results: (response.body as { data?: { results: Sent['results'] } }).data?.results ?? [],
          };
        }),
      );
      sent.push(...batch);
    }
    expect(sent.filter((request) => request.status !== 200).map((request) => request.status)).toEqual([]);

    // Commit order of the requests that wrote: writes on one authority take turns, and each
    // appends its audit events after its locks, so the first event id orders conflicting ones.
    const firstEvent = new Map(
      (
        await sql<{ request_id: string; first: number }>(
          `SELECT request_id, min(id)::bigint AS first FROM audit_events
           WHERE request_id = ANY($1::text[]) GROUP BY request_id`,
          [sent.map((request) => request.requestId)],
        )
      ).map((row) => [row.request_id, Number(row.first)]),
    );
    const writers = sent
      .filter((request) => firstEvent.has(request.requestId))
      .sort((a, b) => (firstEvent.get(a.requestId) ?? 0) - (firstEvent.get(b.requestId) ?? 0));
    expect(writers.length).toBeGreaterThan(ROUNDS);

    // Replay them serially: each item's answer must be what that order gives, and so must the end.
    const live = new Set<string>();
    const key = (item: Item): string => `${item.authority_id}:${item.permission_id}`;
    for (const request of writers) {
      const seen = new Set<string>();
      const expected = request.items.map((item) => {
        const pair = key(item);
        const first = !seen.has(pair);
        seen.add(pair);
        if (request.mode === 'grant') {
          const granted = first && !live.has(pair);
          live.add(pair);
          return granted ? 'granted' : 'already_granted';
        }
        const revoked = first && live.has(pair);
        live.delete(pair);
        return revoked ? 'revoked' : 'not_granted';
      });
      expect(request.results.map((result) => result.status)).toEqual(expected);
    }
    const rows = await sql<{ authority_id: number; permission_id: number }>(
      'SELECT authority_id, permission_id FROM authority_permissions WHERE authority_id = ANY($1::bigint[]) AND revoked_at IS NULL',
      [authorities],
    );
    expect(rows.map(key).sort()).toEqual([...live].sort());
  }, 120_000);

  it('a real deadlock between two writes is retried: both commit', async () => {
    const uow = app.t.app.get(UnitOfWork);
    const [first, second] = await Promise.all([createUser(), createUser()]);
    const before = uow.conflicts;
    let release: () => void = () => undefined;
    const bothLocked = new Promise<void>((resolve) => {
      let locked = 0;
      release = () => {
        locked += 1;
        if (locked === 2) resolve();
      };
    });
    // Each locks one user, waits until the other holds its own, then asks for the other's: a cycle.
    const crosswise = (mine: number, theirs: number) =>
      uow.run(async (tx) => {
        await tx.write(USERS, "UPDATE users SET display_name = display_name || '.' WHERE id = $1", [mine]);
        release();
        await bothLocked;
        await tx.write(USERS, "UPDATE users SET display_name = display_name || '.' WHERE id = $1", [theirs]);
      });
    await Promise.all([crosswise(first.id, second.id), crosswise(second.id, first.id)]);
    expect(uow.conflicts).toBeGreaterThan(before);
    const names = await sql<{ display_name: string }>('SELECT display_name FROM users WHERE id = ANY($1) ORDER BY id', [
      [first.id, second.id],
    ]);
    // Each transaction appended one dot to each user, exactly once (the rolled-back attempt left nothing).
    expect(names.map((row) => row.display_name.endsWith('..') && !row.display_name.endsWith('...'))).toEqual([
      true,
      true,
    ]);
  }, 30_000);

  it('a conflict that persists through the retries is a 503 with Retry-After, not a 500', async () => {
    const uow = app.t.app.get(UnitOfWork);
    let attempts = 0;
    const failing = uow.run(() => {
      attempts += 1;
      // What the driver throws for SQLSTATE 40001 (a serialization failure).
      return Promise.reject(Object.assign(new Error('could not serialize access'), { code: '40001' }));
    });
    await expect(failing).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      status: 503,
      details: { dependency: 'database', reason: 'contention' },
      headers: { 'Retry-After': '1' },
    });
    expect(attempts).toBe(5);
  });
});
