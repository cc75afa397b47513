import { isDeviceScoped, PERMISSION_CODES } from '../../src/platform/auth/permissions.js';
import type { components } from '../client/api.js';
import type { Caller } from './auth.js';
import type { TestApp } from './app.js';
import { waitForJob } from './jobs.js';
import { caller } from './requests.js';

/** An item of an access review as the API answers it (the committed client types of openapi.json). */
export type ReviewItem = components['schemas']['AccessReviewItemDto'];
/** A campaign as the API answers it. */
export type Review = components['schemas']['AccessReviewDto'];

export const REVIEWS = '/v1/admin/access-reviews';

/**
 * Every device-scoped permission of the catalogue but `devices.create` (which names no existing
 * device): the 16 rights a delegate can hold on a device, as revocable review items.
 */
export const DELEGABLE_ON_A_DEVICE: readonly string[] = PERMISSION_CODES.filter(
  (code) => isDeviceScoped(code) && code !== 'devices.create',
);
export const DAY = 86_400_000;
export const inAWeek = (): string => new Date(Date.now() + 7 * DAY).toISOString();

/**
 * Opens a campaign as `who` (202 `preparing`, `Location` on it) and waits for its snapshot job to
 * succeed. `body` overrides the defaults (a week to go, default `keep`).
 */
export async function openReview(
  t: TestApp,
  who: Caller,
  body: { name: string; scope: object; [field: string]: unknown },
): Promise<{ id: number; job_id: string }> {
  const res = await caller(t, who)
    .post(REVIEWS, { default_decision: 'keep', due_at: inAWeek(), ...body })
    .expect(202);
  expect(res.body.data).toMatchObject({ state: 'preparing' });
  expect(res.headers.location).toBe(`${REVIEWS}/${res.body.data.id}`);
  const job = await waitForJob(t, who.auth, res.body.data.job_id);
  expect(job.state).toBe('succeeded');
  return res.body.data;
}

/** The first 100 items of a campaign as `who` sees them (`query` adds filters, `&user_id=…`). */
export async function reviewItems(t: TestApp, who: Caller, id: number, query = ''): Promise<ReviewItem[]> {
  return (await caller(t, who).get(`${REVIEWS}/${id}/items?page_size=100${query}`).expect(200)).body.data;
}
