import type { Client } from 'openapi-fetch';
import type { paths } from './api.js';

/*
 * A portal team's first integration, written only against the types openapi-typescript generates
 * from the committed openapi.json (test/client/api.d.ts): every path, parameter, header, body and
 * answer below must be what the document says, or this file does not type-check.
 */
export type AdminClient = Client<paths>;

export interface FlowResult {
  readonly userId: number;
  readonly listedIds: readonly number[];
  readonly deviceId: number;
  readonly holderAuthorityId: number;
  readonly newOwnerAuthorityId: number;
  readonly previousOwner: number | null;
  readonly granted: readonly string[];
  readonly pushJobState: string;
  readonly pushResult: unknown;
}

function expectData<T>(step: string, answer: { data?: { data: T }; error?: unknown; response: Response }): T {
  if (answer.data === undefined)
    throw new Error(`${step}: ${answer.response.status} ${JSON.stringify(answer.error ?? null)}`);
  return answer.data.data;
}

export async function adminFlow(client: AdminClient, tag: string): Promise<FlowResult> {
  // 1. Create a user (an operator) and activate it with the ETag the creation gave.
  const created = await client.POST('/v1/admin/users', {
    params: { header: { 'Idempotency-Key': `create-${tag}` } },
    body: { email: `client-${tag}@example.com`, display_name: 'Client Flow', role_id: 3 },
  });
  const user = expectData('create user', created);
  const activated = await client.POST('/v1/admin/users/{id}/activate', {
    params: { path: { id: user.id }, header: { 'If-Match': created.response.headers.get('etag') ?? '*' } },
  });
  expectData('activate user', activated);

  // 2. List with a filter and a sort.
  const listed = await client.GET('/v1/admin/users', {
    params: {
      query: { q: `client-${tag}`, role_id: 3, status_id: 2, sort: 'created_at:desc,email:asc', count: 'exact' },
    },
  });
  const page = expectData('list users', listed);

  // 3. A device and an authority on it for the new user.
  const device = expectData(
    'create device',
    await client.POST('/v1/admin/devices', {
      body: { serial_number: `CLIENT-${tag}`, name: 'Client door', model: 'X200' },
    }),
  );
  const authority = expectData(
    'create authority',
    await client.POST('/v1/admin/authorities', {
      body: { device_id: device.id, user_id: user.id, label: 'client flow' },
    }),
  );

  // 4. Transfer the owner to the new user (a first assignment: no previous owner).
  const transferred = expectData(
    'transfer owner',
    await client.POST('/v1/admin/devices/{device_id}/transfer-owner', {
      params: { path: { device_id: device.id } },
      body: { new_owner_user_id: user.id, reason: 'client flow' },
    }),
  );
  // A route that can be previewed answers either the write's data or a preview (`?dry_run=true`).
  if ('dry_run' in transferred) throw new Error('transfer owner: a preview answered a write');
  const transfer = transferred;

  // 5. Bulk-grant two device permissions to a second user's authority on the device.
  const holder = expectData(
    'create holder',
    await client.POST('/v1/admin/users', {
      body: { email: `holder-${tag}@example.com`, display_name: 'Holder', role_id: 4 },
    }),
  );
  const holderAuthority = expectData(
    'create holder authority',
    await client.POST('/v1/admin/authorities', { body: { device_id: device.id, user_id: holder.id } }),
  );
  const catalogue = expectData(
    'permissions',
    await client.GET('/v1/admin/permissions', { params: { query: { q: 'authorities.', page_size: 100 } } }),
  );
  const wanted = catalogue.filter((permission) => ['authorities.read', 'authorities.update'].includes(permission.code));
  // Without `Prefer: respond-async` the answer is the bulk's own (200); with it, a job (202).
  const bulkAnswer = await client.POST('/v1/admin/authority-permissions/bulk-grant', {
    body: {
      items: wanted.map((permission) => ({ authority_id: holderAuthority.id, permission_id: permission.id })),
      reason: 'client flow',
    },
  });
  if (bulkAnswer.data === undefined || !('results' in bulkAnswer.data.data))
    throw new Error(`bulk grant: ${bulkAnswer.response.status} ${JSON.stringify(bulkAnswer.error ?? null)}`);
  const bulk = bulkAnswer.data.data;

  // 6. A message to the new user, a push of it (no body: title and body default to the message's), its job.
  const message = expectData(
    'create message',
    await client.POST('/v1/admin/inbox', {
      body: { user_id: user.id, type: 'notice', title: 'Welcome', body: 'Your door is ready' },
    }),
  );
  const accepted = expectData(
    'send push',
    await client.POST('/v1/admin/inbox/{id}/send-push', { params: { path: { id: message.id } } }),
  );
  let job = expectData(
    'job',
    await client.GET('/v1/admin/jobs/{job_id}', { params: { path: { job_id: accepted.job_id } } }),
  );
  for (let polls = 0; polls < 100 && job.state !== 'succeeded' && job.state !== 'failed'; polls += 1) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    job = expectData(
      'job',
      await client.GET('/v1/admin/jobs/{job_id}', { params: { path: { job_id: accepted.job_id } } }),
    );
  }

  return {
    userId: user.id,
    listedIds: page.map((row) => row.id),
    deviceId: device.id,
    holderAuthorityId: authority.id,
    newOwnerAuthorityId: transfer.new_owner.id,
    previousOwner: transfer.previous_owner === null ? null : transfer.previous_owner.user_id,
    granted: bulk.results.map((item) => `${item.permission_id}:${item.status}`),
    pushJobState: job.state,
    pushResult: job.result,
  };
}
