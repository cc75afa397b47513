import { setTimeout as sleep } from 'node:timers/promises';
import { actor, createUser, permissionId, type Caller, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';
import { ROLE } from '../../src/platform/auth/roles.js';

/*
 * The property of part 6.13: whatever happened since, asking about a past moment with `at=` gives
 * the answer the service gave at that moment. A random sequence of grants, revokes, authority
 * changes, expiries, role and status changes and ownership transfers is applied through the API;
 * after each step every (user, permission, device) cell is asked live and recorded with the
 * moment; at the end every earlier moment is asked again with `at=`, through `/authz/check` and
 * through both access lists. ACCESS_SEED=<n> replays a sequence.
 */

const PERMISSIONS = ['authorities.revoke', 'devices.transfer_owner', 'devices.read'] as const;
const STEPS = Number(process.env.ACCESS_STEPS ?? 45);
const SEED = Number(process.env.ACCESS_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** mulberry32: a small seeded generator, so a failing sequence can be replayed. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

interface Answer {
  allowed: boolean;
  decided_by: string | null;
  authority_id: number | null;
  grant_id: number | null;
}
interface Moment {
  at: string;
  step: string;
  answers: Map<string, Answer>;
}

describe(`access history: any past moment answers as it did then (seed ${SEED})`, () => {
  let t: TestApp;
  let root: Caller;
  let users: TestUser[];
  let devices: number[];
  const random = generator(SEED);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  /** Expiry instants set so far (ms): no recorded window may straddle one. */
  const expiries: number[] = [];

  beforeAll(async () => {
    t = await startApp({ widgets: false, env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
    root = await actor('super_admin');
    users = [
      await createUser({ role: 'operator' }),
      await createUser({ role: 'operator' }),
      await createUser({ role: 'viewer' }),
      await createUser({ role: 'operator' }),
    ];
    devices = [(await createDevice({ ownerId: users[0]?.id })).id, (await createDevice()).id];
  });
  afterAll(() => t.close());

  const http = () => caller(t, root);
  const cell = (user: number, permission: string, device: number): string => `${user} ${permission} ${device}`;
  const soon = (): string => {
    const at = Date.now() + 150 + Math.floor(random() * 900);
    expiries.push(at);
    return new Date(at).toISOString();
  };

  async function authorityOf(device: number, user: number): Promise<{ id: number; owner: boolean } | undefined> {
    const list = await http().get(`/v1/admin/authorities?device_id=${device}&user_id=${user}&include_deleted=true`);
    expect(list.status).toBe(200);
    return list.body.data[0] as { id: number; owner: boolean } | undefined;
  }

  /** One random step through the API; answers what it tried (a refused try is a step too). */
  async function step(): Promise<string> {
    const user = pick(users).id;
    const device = pick(devices);
    const permission = pick(PERMISSIONS);
    const authority = await authorityOf(device, user);
    const kind = Math.floor(random() * 12);
    let response;
    switch (kind) {
      case 0:
        response = await http().post('/v1/admin/authorities', {
          device_id: device,
          user_id: user,
          ...(random() < 0.4 ? { expires_at: soon() } : {}),
        });
        break;
      case 1:
        response =
          authority &&
          (await http().post(`/v1/admin/authorities/${authority.id}/${pick(['revoke', 'deactivate', 'activate'])}`));
        break;
      case 2:
        response = authority && (await http().delete(`/v1/admin/authorities/${authority.id}`));
        if (authority && response?.status === 204)
          response = await http().post(`/v1/admin/authorities/${authority.id}/restore`);
        break;
      case 3:
      case 4:
        response =
          authority &&
          (await http().post('/v1/admin/authority-permissions', {
            authority_id: authority.id,
            permission_id: permissionId(permission === 'devices.read' ? 'devices.read' : permission),
          }));
        break;
      case 5: {
        const held =
          authority &&
          (await http().get(`/v1/admin/authority-permissions?authority_id=${authority.id}&is_active=true`));
        const row = held?.body.data[0] as { id: number } | undefined;
        response = row && (await http().delete(`/v1/admin/authority-permissions/${row.id}`));
        break;
      }
      case 6:
        response = await http().post('/v1/admin/permission-grants/grant', {
          user_id: user,
          permission_id: permissionId(permission),
          ...(random() < 0.5 ? { expires_at: soon() } : {}),
        });
        break;
      case 7:
        response = await http().post('/v1/admin/permission-grants/revoke', {
          user_id: user,
          permission_id: permissionId(permission),
        });
        break;
      case 8:
        response = await http().patch(`/v1/admin/users/${user}`, {
          role_id: ROLE[pick(['operator', 'viewer', 'member', 'admin'] as const)],
        });
        break;
      case 9:
        response = await http().post(`/v1/admin/users/${user}/${pick(['suspend', 'activate'])}`);
        break;
      case 10:
        response = await http().post(`/v1/admin/devices/${device}/transfer-owner`, {
          new_owner_user_id: user,
          keep_previous_owner_access: random() < 0.5,
        });
        break;
      default:
        response =
          authority &&
          !authority.owner &&
          (await http().patch(`/v1/admin/authorities/${authority.id}`, { expires_at: random() < 0.3 ? null : soon() }));
    }
    if (response) expect(response.status).toBeLessThan(500);
    return `${kind} user ${user} device ${device} ${permission}: ${response ? response.status : 'skipped'}`;
  }

  /** Every cell asked live, inside a window no expiry falls in (else asked again after it). */
  async function record(label: string): Promise<Moment> {
    for (;;) {
      await sleep(3); // the step's transaction started before this moment, to the millisecond
      const opened = Date.now();
      const answers = new Map<string, Answer>();
      for (const user of users)
        for (const permission of PERMISSIONS)
          for (const device of devices) {
            const check = await http()
              .get(`/v1/admin/authz/check?user_id=${user.id}&permission=${permission}&device_id=${device}`)
              .expect(200);
            const { allowed, decided_by, authority_id, grant_id } = check.body.data as Answer;
            answers.set(cell(user.id, permission, device), { allowed, decided_by, authority_id, grant_id });
          }
      const closed = Date.now();
      await sleep(3); // and the next step's transaction starts after it
      if (!expiries.some((at) => at >= opened - 2 && at <= closed + 2))
        return { at: new Date(opened).toISOString(), step: label, answers };
      await sleep(Math.max(0, Math.max(...expiries.filter((at) => at <= closed + 2)) - Date.now() + 5));
    }
  }

  it('replays every recorded moment through /authz/check?at= and the access lists', async () => {
    const moments: Moment[] = [await record('start')];
    // A sequence that changed little would prove little: a seed whose steps were mostly skipped
    // (nothing to revoke yet, …) takes more steps, until enough writes took effect.
    const tookEffect = (): number => moments.filter((moment) => / 20\d$/.test(moment.step)).length;
    for (let index = 0; index < STEPS || (tookEffect() <= STEPS / 5 && index < STEPS * 3); index += 1)
      moments.push(await record(await step()));
    expect(tookEffect()).toBeGreaterThan(STEPS / 5);
    expect(moments.flatMap((moment) => [...moment.answers.values()]).some((answer) => answer.allowed)).toBe(true);
    expect(moments.flatMap((moment) => [...moment.answers.values()]).some((answer) => !answer.allowed)).toBe(true);

    const mismatches: string[] = [];
    for (const moment of moments) {
      const at = encodeURIComponent(moment.at);
      for (const [key, recorded] of moment.answers) {
        const [user, permission, device] = key.split(' ');
        const then = await http()
          .get(`/v1/admin/authz/check?user_id=${user}&permission=${permission}&device_id=${device}&at=${at}`)
          .expect(200);
        const { allowed, decided_by, authority_id, grant_id } = then.body.data as Answer;
        if (JSON.stringify({ allowed, decided_by, authority_id, grant_id }) !== JSON.stringify(recorded))
          mismatches.push(
            `${moment.step} @${moment.at} ${key}: was ${JSON.stringify(recorded)}, at= says ${JSON.stringify(then.body.data)}`,
          );
      }
      for (const permission of PERMISSIONS)
        for (const device of devices) {
          // Every page: the shared database's other specs have many users allowed by role.
          const listed = new Set<number>();
          for (let page = 1; ; page += 1) {
            const list = await http()
              .get(`/v1/admin/devices/${device}/access?permission=${permission}&at=${at}&page_size=100&page=${page}`)
              .expect(200);
            expect(list.body.meta).toMatchObject({ at: moment.at, total_exact: true });
            for (const row of list.body.data as { user_id: number }[]) listed.add(row.user_id);
            if (page * 100 >= list.body.meta.total) break;
          }
          for (const user of users)
            if (listed.has(user.id) !== moment.answers.get(cell(user.id, permission, device))?.allowed)
              mismatches.push(
                `${moment.step} @${moment.at} device list ${device} ${permission}: user ${user.id} listed ${listed.has(user.id)}`,
              );
        }
      for (const user of users)
        for (const permission of PERMISSIONS) {
          const list = await http()
            .get(`/v1/admin/users/${user.id}/access?permission=${permission}&at=${at}&page_size=100`)
            .expect(200);
          const listed = new Set((list.body.data as { device_id: number }[]).map((row) => row.device_id));
          for (const device of devices) {
            const allowed = list.body.meta.scope === 'all' || listed.has(device);
            if (allowed !== moment.answers.get(cell(user.id, permission, device))?.allowed)
              mismatches.push(
                `${moment.step} @${moment.at} user list ${user.id} ${permission}: device ${device} ${allowed}`,
              );
          }
        }
    }
    expect(mismatches).toEqual([]);
  }, 300_000);
});
