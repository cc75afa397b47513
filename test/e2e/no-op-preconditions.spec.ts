import { createUser } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';

/*
 * Part 9 on the 204 answers of part 3: restoring a live record and deleting a deleted one change
 * nothing, but a stale If-Match is still 412 with the current ETag (never a silent 204), and the
 * current one keeps the 204.
 */
describe('If-Match on the 204 no-ops (parts 3, 9)', () => {
  const app = useApp({ widgets: false });
  const api = () => caller(app.t, app.root);

  const resources: [string, string, () => Promise<number>][] = [
    ['users', 'user', async () => (await createUser({ role: 'viewer' })).id],
    ['authorities', 'authority', async () => createAuthority((await createDevice()).id, (await createUser()).id)],
    [
      'inbox',
      'inbox_message',
      async () =>
        (
          await api()
            .post('/v1/admin/inbox', { user_id: (await createUser()).id, type: 'notice', title: 'T', body: 'B' })
            .expect(201)
        ).body.data.id as number,
    ],
  ];

  it.each(resources)('/%s: restore of a live record and delete of a deleted one', async (path, type, create) => {
    const id = await create();
    const base = `/v1/admin/${path}/${id}`;
    const live = (await api().get(base).expect(200)).headers.etag as string;
    const stale = await api().post(`${base}/restore`).set('If-Match', '"99"').expect(412);
    expect(stale.body.error).toMatchObject({ code: 'PRECONDITION_FAILED', details: { current_etag: live } });
    await api().post(`${base}/restore`).set('If-Match', live).expect(204);

    const deleted = (await api().delete(base).set('If-Match', live).expect(200)).headers.etag as string;
    expect(deleted).not.toBe(live);
    const late = await api().delete(base).set('If-Match', live).expect(412);
    expect(late.body.error).toMatchObject({ code: 'PRECONDITION_FAILED', details: { current_etag: deleted } });
    await api().delete(base).set('If-Match', deleted).expect(204);
    await api().delete(base).set('If-Match', '*').expect(204);

    const actions = await sql<{ action: string }>(
      'SELECT action FROM audit_events WHERE resource_type = $1 AND resource_id = $2 ORDER BY id',
      [type, String(id)],
    );
    expect(actions.map((row) => row.action).filter((action) => !action.endsWith('.create'))).toEqual([
      `${type}.delete`,
    ]);
  });
});
