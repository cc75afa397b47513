import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli, runShell } from '../support/cli.js';
import { freePort } from '../support/redis-server.js';
import { startServer, waitReady, type Running } from '../support/server-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The shell blocks of a Markdown file, in order (1-based as a reader counts them). */
function shellBlocks(file: string): string[] {
  const blocks: string[] = [];
  let current: string[] | undefined;
  for (const line of readFileSync(join(ROOT, file), 'utf8').split('\n')) {
    if (current === undefined && line.startsWith('```sh')) current = [];
    else if (current !== undefined && line.startsWith('```')) {
      blocks.push(current.join('\n'));
      current = undefined;
    } else current?.push(line);
  }
  return blocks;
}

/*
 * The walk-throughs run as pasted (issue 42 item 7): each block below is taken from its document,
 * in order, and run by bash with `set -euo pipefail` against one server of a fresh data directory
 * (the embedded default, as `npm start` runs it), after the README's bootstrap-admin and seed-demo.
 * Two things are changed, and only these: the server's and the receiver's ports (a run beside
 * another must not take 3000 and 8080), and a line that starts a server (`npm start &`), since the
 * test's server already runs with the settings the webhook walk-through asks for. A block passes
 * when every command succeeds, no line prints `null` (a jq path into a failed answer), and the
 * server answered no 5xx. Left out, with their reason: blocks that install or start things
 * (README #1–2, tokens.md, docker.md, operations.md: CLI reference), the feed's endless tail loop
 * (events-and-webhooks #1), snippets that continue another (access-changes.md), and the schematic
 * commands (modules #3, which write files; schematic.spec.ts runs them).
 */
const WALKTHROUGHS: readonly [file: string, block: number][] = [
  ['README.md', 3],
  ['docs/modules.md', 1],
  ['docs/modules.md', 2],
  ['docs/access.md', 1],
  ['docs/access.md', 2],
  ['docs/groups.md', 1],
  ['docs/access-requests.md', 1],
  ['docs/access-reviews.md', 1],
  ['docs/scim.md', 1],
  ['docs/events-and-webhooks.md', 2],
];

describe('the documents’ walk-throughs run as pasted (issue 42 item 7)', () => {
  let dataDir: string;
  let server: Running;
  let port: number;
  let receiverPort: number;
  let token: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'admin-api-docs-'));
    chmodSync(dataDir, 0o755);
    port = await freePort();
    receiverPort = await freePort();
    env = {
      DATA_DIR: dataDir,
      EMBEDDED_POSTGRES_PORT: String(await freePort()),
      PORT: String(port),
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      RECEIVER_PORT: String(receiverPort),
    };
    const bootstrap = await runCli(['bootstrap-admin', '--email', 'a@example.com'], env);
    expect(bootstrap.code).toBe(0);
    token = bootstrap.stdout.trim();
    server = startServer({ ...env, LOG_LEVEL: 'info' });
    await waitReady(port, server);
    const seeded = await runCli(['seed-demo', '--users', '1000'], env);
    expect(seeded.code).toBe(0);
  }, 180_000);
  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(join(ROOT, 'grants.json'), { force: true });
  });

  it('covers the walk-throughs', () => {
    expect(WALKTHROUGHS.length).toBe(10);
  });

  it.each(WALKTHROUGHS)(
    '%s, shell block %i',
    async (file, index) => {
      const block = shellBlocks(file)[index - 1];
      if (block === undefined) throw new Error(`${file} has no shell block ${index}`);
      const script = block
        .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`)
        .replaceAll('127.0.0.1:8080', `127.0.0.1:${receiverPort}`)
        .split('\n')
        .filter((line) => !/\bnpm start &\s*$/.test(line))
        .join('\n');
      const run = await runShell(`set -euo pipefail\n${script}\nkill $(jobs -p) 2>/dev/null || true\n`, ROOT, {
        ...env,
        TOKEN: token,
        // The project's Node first, as scripts/node.sh puts it.
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      });
      const nulls = run.stdout.split('\n').filter((line) => line.trim() === 'null');
      expect({ code: run.code, nulls, stderr: run.code === 0 ? '' : run.stderr.slice(-2000) }).toEqual({
        code: 0,
        nulls: [],
        stderr: '',
      });
      expect(server.output()).not.toMatch(/"status":5\d\d/);
      expect(server.output()).not.toContain('unhandled error');
    },
    180_000,
  );
});
