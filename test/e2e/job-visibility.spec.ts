import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { JobQueue } from '../../src/platform/jobs/job-queue.js';
import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { caller } from '../support/requests.js';

/*
 * Who sees a job (part 6.10): whoever started it, and every super_admin and admin. Anyone else,
 * even with `jobs.read`, gets on both routes exactly the 404 a job id that never existed gets.
 */
describe('job visibility: GET /jobs/{job_id} and its results', () => {
  const schema = jobsSchema();
  let t: TestApp;
  let root: Caller;
  let admin: Caller;
  let starter: Caller;
  let otherOperator: Caller;
  let viewer: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, env: { JOBS_SCHEMA: schema, JOB_WORKERS: 'true' } });
    [root, admin, starter, otherOperator, viewer] = await Promise.all([
      actor('super_admin'),
      actor('admin'),
      actor('operator'),
      actor('operator'),
      actor('viewer'),
    ]);
  });
  afterAll(() => t.close());

  /** A 404 as a client sees it, with the job id and the request id taken out. */
  function seen(response: Response, jobId: string): unknown {
    const body = JSON.parse(JSON.stringify(response.body).replaceAll(jobId, '<job>')) as { meta: object };
    return { status: response.status, body: { ...body, meta: { ...body.meta, request_id: '<request>' } } };
  }

  /** What `who` gets for a job id that never existed, on the detail and on the results. */
  async function missing(who: Caller): Promise<{ detail: unknown; results: unknown }> {
    const id = randomUUID();
    return {
      detail: seen(await caller(t, who).get(`/v1/admin/jobs/${id}`), id),
      results: seen(await caller(t, who).get(`/v1/admin/jobs/${id}/results`), id),
    };
  }

  /** Both routes answer `who` as if the job did not exist, error and envelope alike. */
  async function expectHidden(who: Caller, jobId: string): Promise<void> {
    const detail = await caller(t, who).get(`/v1/admin/jobs/${jobId}`);
    const results = await caller(t, who).get(`/v1/admin/jobs/${jobId}/results`);
    expect(detail.body.error?.code).toBe('JOB_NOT_FOUND');
    expect({ detail: seen(detail, jobId), results: seen(results, jobId) }).toEqual(await missing(who));
  }

  async function expectShown(who: Caller, jobId: string, createdBy: number | null): Promise<void> {
    const detail = await caller(t, who).get(`/v1/admin/jobs/${jobId}`).expect(200);
    expect(detail.body.data).toMatchObject({ job_id: jobId, created_by: createdBy });
  }

  it('a bulk job started by an operator: the operator, an admin and a super_admin see it and its results; another operator and a viewer get 404', async () => {
    // An authority that does not exist: the item fails, the job succeeds with one result.
    const accepted = await caller(t, starter)
      .post('/v1/admin/authority-permissions/bulk-grant', {
        items: [{ authority_id: 987654321, permission_id: permissionId('devices.read') }],
      })
      .set('Prefer', 'respond-async')
      .expect(202);
    const jobId = accepted.body.data.job_id as string;
    const job = await waitForJob(t, starter.auth, jobId, 60_000);
    expect(job).toMatchObject({ type: 'bulk', state: 'succeeded', created_by: starter.user.id });
    for (const who of [starter, admin, root]) {
      await expectShown(who, jobId, starter.user.id);
      const results = await caller(t, who).get(`/v1/admin/jobs/${jobId}/results`).expect(200);
      expect(results.body.meta).toMatchObject({ total: 1, total_exact: true });
      expect(results.body.data).toMatchObject([{ index: 0, status: 'failed' }]);
    }
    for (const who of [otherOperator, viewer]) await expectHidden(who, jobId);
  }, 90_000);

  it('a send-push started by an operator: the operator and the administrators see it, nobody else', async () => {
    const recipient = await createUser({ role: 'member' });
    const message = await caller(t, starter)
      .post('/v1/admin/inbox', { user_id: recipient.id, type: 'notice', title: 'T', body: 'B' })
      .expect(201);
    const accepted = await caller(t, starter)
      .post(`/v1/admin/inbox/${message.body.data.id as number}/send-push`)
      .expect(202);
    const jobId = accepted.body.data.job_id as string;
    const job = await waitForJob(t, starter.auth, jobId);
    expect(job).toMatchObject({ type: 'send-push', created_by: starter.user.id });
    // A finished job other than a bulk has no results, which its viewers see as an empty list.
    const results = await caller(t, starter).get(`/v1/admin/jobs/${jobId}/results`).expect(200);
    expect(results.body).toMatchObject({ data: [], meta: { total: 0, total_exact: true } });
    for (const who of [admin, root]) await expectShown(who, jobId, starter.user.id);
    for (const who of [otherOperator, viewer]) await expectHidden(who, jobId);
  }, 60_000);

  it('a cache rebuild is seen by the super_admin who asked and by an admin; not by operators', async () => {
    const accepted = await caller(t, root).post('/v1/admin/cache/rebuild', { scope: 'lists' }).expect(202);
    const jobId = accepted.body.data.job_id as string;
    for (const who of [root, admin]) await expectShown(who, jobId, root.user.id);
    for (const who of [starter, viewer]) await expectHidden(who, jobId);
  });

  it('a system job (no creator) is seen by super_admin and admin only', async () => {
    // Enqueued outside any request, as the service's own flows do.
    const jobId = await t.app
      .get(UnitOfWork)
      .run((tx) => t.app.get(JobQueue).enqueue(tx, 'cache-rebuild', { scope: 'lists' }));
    for (const who of [root, admin]) await expectShown(who, jobId, null);
    for (const who of [starter, otherOperator, viewer]) await expectHidden(who, jobId);
  });
});
