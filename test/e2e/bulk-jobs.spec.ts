import { randomUUID } from 'node:crypto';
import { EXACT_COUNT_LIMIT } from '../../src/platform/http/list/list-spec.js';
import { JobQueue } from '../../src/platform/jobs/job-queue.js';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { createSession } from '../support/auth.js';
import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { caller } from '../support/requests.js';

/*
 * Heavy bulks as jobs (part 6.6): `Prefer: respond-async` takes up to 100 000 items and answers
 * 202; the job works in chunks of 1000 (each one transaction with its writes, audit events and
 * per-item results) and `GET /jobs/{job_id}/results` pages the results in item order.
 */
const CODES = ['devices.read', 'devices.update', 'authorities.read', 'authorities.update', 'authorities.revoke'];

interface ItemResult {
  index: number;
  status: string;
  error: { code: string } | null;
}

describe('bulk routes as jobs (Prefer: respond-async)', () => {
  const schema = jobsSchema();
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, env: { JOBS_SCHEMA: schema, JOB_WORKERS: 'true' } });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  async function allResults(jobId: string, pageSize: number): Promise<ItemResult[]> {
    const results: ItemResult[] = [];
    for (let page = 1; ; page += 1) {
      const response = await caller(t, root)
        .get(`/v1/admin/jobs/${jobId}/results?page=${page}&page_size=${pageSize}`)
        .expect(200);
      results.push(...(response.body.data as ItemResult[]));
      if ((response.body.data as unknown[]).length < pageSize) return results;
    }
  }

  it("grants 2500 items in chunks: 202, the job's counts, every result in item order, the rows and audit events", async () => {
    const device = await createDevice();
    const authorities: number[] = [];
    for (let n = 0; n < 10; n += 1) authorities.push(await createAuthority(device.id, (await createUser()).id));
    const pairs = authorities.flatMap((authority_id) =>
      CODES.map((code) => ({ authority_id, permission_id: permissionId(code) })),
    );
    // 50 distinct pairs, repeated to 2500 items, and every 100th item an unknown authority.
    const items = Array.from({ length: 2500 }, (_, index) =>
      index % 100 === 99 ? { authority_id: 987654321, permission_id: permissionId('devices.read') } : pairs[index % 50],
    );
    const accepted = await caller(t, root)
      .post('/v1/admin/authority-permissions/bulk-grant', { items, reason: 'rota as a job' })
      .set('Prefer', 'respond-async')
      .expect(202);
    const jobId = accepted.body.data.job_id as string;
    expect(accepted.body.data).toEqual({ job_id: jobId, state: 'queued' });
    expect(accepted.headers.location).toBe(`/v1/admin/jobs/${jobId}`);
    expect(accepted.headers['retry-after']).toBe('1');
    // The items wait beside the job in chunks of 1000, not in the queue's payload (read by every poll).
    const [queued] = await sql(`SELECT data FROM ${schema}.job WHERE id = $1`, [jobId]);
    expect(Object.keys((queued as { data: object }).data)).not.toContain('items');
    const job = await waitForJob(t, root.auth, jobId, 60_000);
    expect(job).toMatchObject({
      type: 'bulk',
      state: 'succeeded',
      result: { accepted: 2500, processed: 2475, failed: 25 },
    });
    // Each chunk was taken by the transaction that did its work: nothing is left behind.
    expect(await sql('SELECT count(*)::int AS n FROM bulk_job_items WHERE job_id = $1', [jobId])).toEqual([{ n: 0 }]);
    expect(Object.keys(job.result as object).sort()).toEqual(['accepted', 'failed', 'processed']);

    const first = await caller(t, root).get(`/v1/admin/jobs/${jobId}/results?page_size=3`).expect(200);
    expect(first.body.meta).toMatchObject({ total: 2500, total_exact: true, page: 1, page_size: 3 });
    const results = await allResults(jobId, 100);
    expect(results.map((result) => result.index)).toEqual(items.map((_, index) => index));
    const expected = items.map((item, index) =>
      item?.authority_id === 987654321 ? 'failed' : index < 50 ? 'granted' : 'already_granted',
    );
    expect(results.map((result) => result.status)).toEqual(expected);
    expect(results[99]?.error?.code).toBe('AUTHORITY_NOT_FOUND');
    const [rows] = await sql<{ active: number; events: number }>(
      `SELECT (SELECT count(*)::int FROM authority_permissions WHERE authority_id = ANY($1) AND revoked_at IS NULL) AS active,
              (SELECT count(*)::int FROM audit_events e JOIN authority_permissions ap ON ap.id::text = e.resource_id::text
               WHERE e.action = 'authority_permission.grant' AND ap.authority_id = ANY($1) AND e.actor_id = $2) AS events`,
      [authorities, root.user.id],
    );
    expect(rows).toEqual({ active: 50, events: 50 });
  }, 90_000);

  it('a dry_run job previews each chunk (same statements, rolled back) and stores the results: nothing is written', async () => {
    const device = await createDevice();
    const authority = await createAuthority(device.id, (await createUser()).id);
    const pair = { authority_id: authority, permission_id: permissionId('devices.read') };
    // 1500 items over two chunks: the pair, then its repeats (already granted by the first, in the preview as in a write).
    const items = Array.from({ length: 1500 }, (_, index) =>
      index === 1200 ? { authority_id: 987654321, permission_id: permissionId('devices.read') } : pair,
    );
    const accepted = await caller(t, root)
      .post('/v1/admin/authority-permissions/bulk-grant', { items, dry_run: true, reason: 'preview as a job' })
      .set('Prefer', 'respond-async')
      .expect(202);
    const jobId = accepted.body.data.job_id as string;
    const job = await waitForJob(t, root.auth, jobId, 60_000);
    expect(job).toMatchObject({ state: 'succeeded', result: { accepted: 1500, processed: 1499, failed: 1 } });
    const results = await allResults(jobId, 100);
    expect(results.map((result) => result.index)).toEqual(items.map((_, index) => index));
    // Each chunk is its own preview: its first item would be granted, the rest of its repeats already.
    expect(results.filter((result) => result.status === 'granted').map((result) => result.index)).toEqual([0, 1000]);
    expect(results[1200]).toMatchObject({ status: 'failed', error: { code: 'AUTHORITY_NOT_FOUND' } });
    expect(
      results.filter(
        (result) => (result as { authority_permission_id?: number | null }).authority_permission_id !== null,
      ),
    ).toEqual([]);
    expect(await sql('SELECT id FROM authority_permissions WHERE authority_id = $1', [authority])).toEqual([]);
    expect(
      await sql(
        "SELECT id FROM audit_events WHERE action = 'authority_permission.grant' AND reason = 'preview as a job'",
      ),
    ).toEqual([]);
  });

  it('takes at most 1000 items without the header (400 naming items), and 100 000 with it', async () => {
    const items = Array.from({ length: 1001 }, () => ({ authority_id: 987654321, permission_id: 1 }));
    const refused = await caller(t, root).post('/v1/admin/authority-permissions/bulk-grant', { items }).expect(400);
    expect(refused.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(JSON.stringify(refused.body.error.details)).toContain('items');
    const tooMany = Array.from({ length: 100_001 }, () => ({ authority_id: 9, permission_id: 1 }));
    const over = await caller(t, root)
      .post('/v1/admin/authority-permissions/bulk-revoke', { items: tooMany })
      .set('Prefer', 'respond-async')
      .expect(400);
    expect(JSON.stringify(over.body.error.details)).toContain('items');
    // 100 000 bad items: a 400 listing the first 100 problems, not a crash of the validation.
    const bad = Array.from({ length: 100_000 }, () => ({ authority_id: 0, permission_id: 0 }));
    const invalid = await caller(t, root)
      .post('/v1/admin/authority-permissions/bulk-grant', { items: bad })
      .set('Prefer', 'respond-async')
      .expect(400);
    expect(invalid.body.error.code).toBe('VALIDATION_FAILED');
    expect(invalid.body.error.details.fields).toHaveLength(100);
    expect(invalid.body.error.details.fields[0]).toMatchObject({ field: 'items.0.authority_id' });
  }, 60_000);

  it("refuses a body over the bulk routes' 8 MiB with 413 naming that limit, and other routes keep 1 MiB", async () => {
    const big = JSON.stringify({ items: [], padding: 'x'.repeat(9 * 1_048_576) });
    const bulk = await t
      .http()
      .post('/v1/admin/authority-permissions/bulk-grant')
      .set('Authorization', root.auth)
      .set('Content-Type', 'application/json')
      .send(big)
      .expect(413);
    expect(bulk.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { limit_bytes: 8 * 1_048_576 } });
    const other = await t
      .http()
      .post('/v1/admin/devices')
      .set('Authorization', root.auth)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ name: 'x'.repeat(1_100_000) }))
      .expect(413);
    expect(other.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { limit_bytes: 1_048_576 } });
  });

  it('a job enqueued before bulk_job_items (its items in the payload) still runs every item', async () => {
    const device = await createDevice();
    const holder = await createUser({ role: 'viewer' });
    const authority = await createAuthority(device.id, holder.id);
    const sessionId = await createSession(root.user.id);
    const jobId = await t.app.get(UnitOfWork).run((tx) =>
      t.app.get(JobQueue).enqueue(tx, 'bulk', {
        kind: 'authority_permissions.grant',
        actor_id: root.user.id,
        session_id: sessionId,
        request_id: 'before-the-upgrade',
        items: [
          { authority_id: authority, permission_id: permissionId('devices.read') },
          { authority_id: 987654321, permission_id: permissionId('devices.read') },
        ],
      }),
    );
    const job = await waitForJob(t, root.auth, jobId, 60_000);
    expect(job).toMatchObject({ state: 'succeeded', result: { accepted: 2, processed: 1, failed: 1 } });
    expect(
      await sql('SELECT count(*)::int AS n FROM authority_permissions WHERE authority_id = $1 AND revoked_at IS NULL', [
        authority,
      ]),
    ).toEqual([{ n: 1 }]);
  });

  it('deletes messages as a job, and pages the results', async () => {
    const user = await createUser();
    const ids: number[] = [];
    for (let n = 0; n < 3; n += 1)
      ids.push(
        (
          await caller(t, root)
            .post('/v1/admin/inbox', { user_id: user.id, type: 'notice', title: `m${n}`, body: 'b' })
            .expect(201)
        ).body.data.id as number,
      );
    const items = [...ids, 987654321, ids[0]].map((id) => ({ id }));
    const accepted = await caller(t, root)
      .post('/v1/admin/inbox/bulk-delete', { items })
      .set('Prefer', 'respond-async')
      .expect(202);
    const job = await waitForJob(t, root.auth, accepted.body.data.job_id as string);
    expect(job).toMatchObject({ state: 'succeeded', result: { accepted: 5, processed: 4, failed: 1 } });
    const results = await allResults(accepted.body.data.job_id as string, 10);
    expect(results.map((result) => result.status)).toEqual([
      'deleted',
      'deleted',
      'deleted',
      'failed',
      'already_deleted',
    ]);
    expect(await sql('SELECT count(*)::int AS n FROM inbox_messages WHERE id = ANY($1) AND is_deleted', [ids])).toEqual(
      [{ n: 3 }],
    );
  });

  it("pages a job of more items than the exact-count limit with meta.total exact: the job's item count", async () => {
    // Past EXACT_COUNT_LIMIT a list's total may be an estimate (10 001 for 20 000): a client paging
    // up to it would stop short. Unknown messages keep the job cheap: every item fails alone.
    const count = EXACT_COUNT_LIMIT + 2345;
    const items = Array.from({ length: count }, (_, index) => ({ id: 900_000_000 + index }));
    const accepted = await caller(t, root)
      .post('/v1/admin/inbox/bulk-delete', { items })
      .set('Prefer', 'respond-async')
      .expect(202);
    const jobId = accepted.body.data.job_id as string;
    const job = await waitForJob(t, root.auth, jobId, 60_000);
    expect(job).toMatchObject({ state: 'succeeded', result: { accepted: count, processed: 0, failed: count } });
    const first = await caller(t, root).get(`/v1/admin/jobs/${jobId}/results?page_size=100`).expect(200);
    expect(first.body.meta).toMatchObject({ total: count, total_exact: true });
    // The last page holds the last item; the page after it is empty with the same total.
    const lastPage = Math.ceil(count / 100);
    const last = await caller(t, root)
      .get(`/v1/admin/jobs/${jobId}/results?page=${lastPage}&page_size=100`)
      .expect(200);
    expect(last.body.data).toHaveLength(45);
    expect(last.body.data.at(-1)).toMatchObject({ index: count - 1, status: 'failed' });
    const past = await caller(t, root)
      .get(`/v1/admin/jobs/${jobId}/results?page=${lastPage + 1}&page_size=100`)
      .expect(200);
    expect(past.body).toMatchObject({ data: [], meta: { total: count, total_exact: true } });
  }, 120_000);

  describe('before the job ran', () => {
    const idle = jobsSchema();
    let enqueuer: TestApp;
    beforeAll(async () => {
      enqueuer = await startApp({ widgets: false, env: { JOBS_SCHEMA: idle, JOB_WORKERS: 'false' } });
    });
    afterAll(() => enqueuer.close());

    it('results are 409 INVALID_STATE_TRANSITION while queued; a revoked session fails the job, which writes nothing', async () => {
      const admin = await actor('super_admin');
      const device = await createDevice();
      const authority = await createAuthority(device.id, (await createUser()).id);
      const accepted = await caller(enqueuer, admin)
        .post('/v1/admin/authority-permissions/bulk-grant', {
          items: [{ authority_id: authority, permission_id: permissionId('devices.read') }],
        })
        .set('Prefer', 'respond-async')
        .expect(202);
      const jobId = accepted.body.data.job_id as string;
      const early = await caller(enqueuer, admin).get(`/v1/admin/jobs/${jobId}/results`).expect(409);
      expect(early.body.error).toMatchObject({
        code: 'INVALID_STATE_TRANSITION',
        details: { from: 'queued', action: 'read_results' },
      });
      // The requester signs out everywhere before a worker takes the job.
      await caller(enqueuer, root)
        .post(`/v1/admin/users/${admin.user.id}/revoke-sessions`, { reason: 'lost laptop' })
        .expect(200);
      const worker = await startApp({ widgets: false, env: { JOBS_SCHEMA: idle, JOB_WORKERS: 'true' } });
      try {
        const job = await waitForJob(worker, root.auth, jobId, 60_000);
        expect(job).toMatchObject({ state: 'failed' });
        expect(JSON.stringify(job.error)).toContain('can no longer act');
      } finally {
        await worker.close();
      }
      expect(
        await sql('SELECT count(*)::int AS n FROM authority_permissions WHERE authority_id = $1', [authority]),
      ).toEqual([{ n: 0 }]);
      expect(
        (await caller(enqueuer, root).get(`/v1/admin/jobs/${randomUUID()}/results`).expect(404)).body.error.code,
      ).toBe('JOB_NOT_FOUND');
    }, 120_000);

    it('judges the requester again when the job runs: an admin lowered to viewer meanwhile fails the job, which deletes nothing', async () => {
      const admin = await actor('admin');
      const user = await createUser();
      const message = (
        await caller(enqueuer, root)
          .post('/v1/admin/inbox', { user_id: user.id, type: 'notice', title: 'keep me', body: 'b' })
          .expect(201)
      ).body.data.id as number;
      const accepted = await caller(enqueuer, admin)
        .post('/v1/admin/inbox/bulk-delete', { items: [{ id: message }] })
        .set('Prefer', 'respond-async')
        .expect(202);
      await caller(enqueuer, root).patch(`/v1/admin/users/${admin.user.id}`, { role_id: 4 }).expect(200);
      const worker = await startApp({ widgets: false, env: { JOBS_SCHEMA: idle, JOB_WORKERS: 'true' } });
      try {
        const job = await waitForJob(worker, root.auth, accepted.body.data.job_id as string, 60_000);
        expect(job).toMatchObject({ state: 'failed' });
        expect(JSON.stringify(job.error)).toContain('no longer holds inbox.delete');
      } finally {
        await worker.close();
      }
      expect(await sql('SELECT is_deleted FROM inbox_messages WHERE id = $1', [message])).toEqual([
        { is_deleted: false },
      ]);
    }, 120_000);
  });
});
