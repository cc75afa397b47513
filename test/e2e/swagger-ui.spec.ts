import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { actor, createUser, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';

/*
 * Swagger UI in a real browser: Debian's Chromium (`.ci/run` installs it when absent) driven by
 * playwright-core. A newcomer's first look at the API: authorize with a token, "Try it out" on
 * GET /v1/admin/users with a filter, Execute, and read the answer the page shows.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('Swagger UI at /docs, in headless Chromium', () => {
  let t: TestApp;
  let url: string;
  let root: Caller;
  let profile: string;
  let browser: BrowserContext;
  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
    t = await startApp({ redisUrl: null, widgets: false });
    await t.app.listen(0, '127.0.0.1');
    url = await t.app.getUrl();
    root = await actor('super_admin');
    profile = mkdtempSync(join(tmpdir(), 'admin-api-chromium-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      // As root Chromium needs --no-sandbox; the machine's closed network refuses its background calls.
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
    await t?.close();
  });

  it('authorizes with a token, runs "Try it out" on GET /v1/admin/users with filters, and shows a 200 with the data', async () => {
    const tag = randomUUID().slice(0, 8);
    const wanted = await createUser({ role: 'operator', email: `swagger-${tag}@example.com` });
    await createUser({ role: 'viewer', email: `swagger-${tag}-viewer@example.com` });

    const page = browser.pages()[0] ?? (await browser.newPage());
    page.setDefaultTimeout(20_000);
    await page.goto(`${url}/docs`);
    // operations-<tag>-<operationId>: rendered once the page has fetched and drawn the document.
    const operation = page.locator('#operations-users-Users_list');
    await operation.waitFor();

    // Authorize: the bearer scheme adds "Bearer " itself, so the raw token goes in.
    await page.locator('.scheme-container button.authorize').click();
    const dialog = page.locator('.modal-ux');
    await dialog.locator('#auth-bearer-value').fill(root.token);
    await dialog.locator('button.modal-btn.authorize[type=submit]').click();
    await dialog.locator('button.modal-btn.btn-done', { hasText: 'Close' }).click();
    await dialog.waitFor({ state: 'detached' });

    await operation.locator('button.opblock-summary-control').click();
    await operation.locator('button.try-out__btn').click();
    // The list's own parameters, as the list specification documents them.
    await operation.locator('tr[data-param-name="q"][data-param-in="query"] input').fill(`swagger-${tag}`);
    await operation.locator('tr[data-param-name="role_id"][data-param-in="query"] input').fill('3');
    await operation.locator('button.execute').click();

    const response = operation.locator('.live-responses-table tbody .response').first();
    await response.waitFor();
    const requestUrl = await operation.locator('.request-url pre').innerText();
    expect(requestUrl).toContain(`q=swagger-${tag}`);
    expect(requestUrl).toContain('role_id=3');
    expect((await response.locator('.response-col_status').innerText()).trim()).toBe('200');
    const body = JSON.parse(
      await response.locator('.response-col_description .highlight-code pre').first().innerText(),
    ) as { success: boolean; data: { id: number; email: string }[] };
    expect(body.success).toBe(true);
    expect(body.data.map((user) => ({ id: user.id, email: user.email }))).toEqual([
      { id: wanted.id, email: wanted.email },
    ]);
  }, 60_000);
});
