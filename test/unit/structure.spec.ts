import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;

function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith(suffix))
    .map((file) => join(dir, file));
}

describe('the house rules that are cheap to keep by machine (ARCHITECTURE.md)', () => {
  it('the service starts with the same V8 flags everywhere it is started for real: npm start, the image, the benchmarks', () => {
    const scripts = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    const declared = /SERVICE_NODE_FLAGS = (\[[^\]]*\])/.exec(
      readFileSync(join(ROOT, 'bench/support.mjs'), 'utf8'),
    )?.[1];
    const SERVICE_NODE_FLAGS = JSON.parse((declared ?? '[]').replaceAll("'", '"')) as string[];
    expect(SERVICE_NODE_FLAGS.length).toBeGreaterThan(0);
    const flags = SERVICE_NODE_FLAGS.join(' ');
    expect(scripts.start).toContain(`node ${flags} dist/src/main.js`);
    expect(scripts['start:prod']).toBe(`node ${flags} dist/src/main.js`);
    const cmd = ['node', ...SERVICE_NODE_FLAGS, 'dist/src/main.js'].map((part) => `"${part}"`).join(', ');
    expect(readFileSync(join(ROOT, 'docker/Dockerfile'), 'utf8')).toContain(`CMD [${cmd}]`);
  });

  it('every route that prefetches its detail entry hands it to its handler (else it costs two round trips)', () => {
    const controllers = filesUnder('src', '.controller.ts');
    expect(controllers.length).toBeGreaterThan(10);
    const mismatched = controllers
      .map((file) => {
        const text = readFileSync(join(ROOT, file), 'utf8');
        return {
          file,
          prefetch: text.match(/prefetch: detailOf\(/g)?.length ?? 0,
          handed: text.match(/@PrefetchedEntries\(\)/g)?.length ?? 0,
        };
      })
      .filter((counts) => counts.prefetch !== counts.handed);
    expect(mismatched).toEqual([]);
  });

  it('migrations import nothing from src/: editing src/ never changes history', () => {
    const offenders = filesUnder('migrations', '.ts').filter((file) =>
      /from '\.\.\/src\//.test(readFileSync(join(ROOT, file), 'utf8')),
    );
    expect(offenders).toEqual([]);
  });

  it('folder = resource = URL: one controller per file, named after the last segment of its path', () => {
    const controllers = filesUnder('src', '.controller.ts');
    expect(controllers.length).toBeGreaterThan(10);
    const wrong = controllers.flatMap((file) => {
      const paths = [...readFileSync(join(ROOT, file), 'utf8').matchAll(/@Controller\('([^']+)'\)/g)].map(
        (match) => match[1] ?? '',
      );
      const name = relative('src', file).split('/').pop()?.replace('.controller.ts', '');
      // SCIM names its resources in capitals (/scim/v2/Users): the file is named in lower case.
      return paths.length === 1 && paths[0]?.split('/').pop()?.toLowerCase() === name
        ? []
        : [`${file}: ${paths.join(', ') || 'no @Controller'}`];
    });
    expect(wrong).toEqual([]);
  });

  it('only repositories speak SQL: a statement outside a *.repository.ts is in the database layer or the CLI', () => {
    // The platform's database and projections run what repositories declare (lists, transactions,
    // projection versions, the cache epoch); the CLI works without the Nest container, on its own connection.
    const allowed =
      /^src\/platform\/(database|projections|http\/list)\/|^src\/platform\/cache\/cache-epoch\.ts$|^src\/cli\/|^src\/health\/health\.controller\.ts$/;
    const statement = /\b(SELECT\s.+\sFROM|INSERT INTO|UPDATE\s+\w+\s+(\w+\s+)?SET|DELETE FROM)\b/s;
    const offenders = filesUnder('src', '.ts').filter(
      (file) =>
        !file.endsWith('.repository.ts') &&
        !allowed.test(file) &&
        statement.test(readFileSync(join(ROOT, file), 'utf8')),
    );
    expect(offenders).toEqual([]);
  });

  it('no statement under src/platform/ names a table of the access model or a feature: the platform reads only its own', () => {
    // The platform's own tables (created by its migrations); every other table belongs to a module above it.
    const own = new Set([
      'projection_versions',
      'cache_epoch',
      'idempotency_keys',
      'job_results',
      'bulk_job_items',
      'events',
      'audit_events',
      'feed_written',
      'pg_stat_activity',
      'pg_stat_xact_user_tables',
      'unnest',
      'jsonb_array_elements',
      'e',
      'clause',
    ]);
    const named = filesUnder('src/platform', '.ts').flatMap((file) =>
      [...readFileSync(join(ROOT, file), 'utf8').matchAll(/\b(?:FROM|JOIN|INTO|UPDATE)\s+([a-z_]+)\b/g)]
        .map((match) => match[1] ?? '')
        .filter((table) => !own.has(table))
        .map((table) => `${file}: ${table}`),
    );
    expect(named).toEqual([]);
  });

  it('every folder of src/platform/ is a layer of eslint/layers.js, and no file sits directly in it', async () => {
    const { PLATFORM_LAYERS } = await import('../../eslint/layers.js');
    const entries = readdirSync(join(ROOT, 'src/platform'), { withFileTypes: true });
    expect(entries.filter((entry) => !entry.isDirectory()).map((entry) => entry.name)).toEqual([]);
    expect(entries.map((entry) => entry.name).sort()).toEqual(Object.keys(PLATFORM_LAYERS).sort());
  });
});
