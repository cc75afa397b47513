import { CORE_SCHEMA, load, mergeTag } from 'js-yaml';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { replayDockerfile } from '../support/dockerfile.js';

/*
 * No Docker engine runs on the development machines, so the container files are validated as
 * far as they can be here: the compose file parses and wires what it should, and the image
 * starts the service with exactly what `npm run start:prod` runs.
 */
const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

interface ComposeService {
  image?: string;
  pull_policy?: string;
  volumes?: string[];
  build?: { context: string; dockerfile: string };
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
  healthcheck?: { test: string[] };
}

describe('docker/', () => {
  const dockerfile = read('docker/Dockerfile');
  // Compose resolves YAML merge keys (`<<: *app`); so does this parse.
  const compose = load(read('docker/compose.yaml'), { schema: CORE_SCHEMA.withTags(mergeTag) }) as {
    services: Record<string, ComposeService>;
    volumes?: Record<string, unknown>;
  };
  const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };

  it('the image runs what npm run start:prod runs', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(cmd).toBeDefined();
    expect((JSON.parse(cmd ?? '[]') as string[]).join(' ')).toBe(pkg.scripts['start:prod']);
  });

  it('is multi-stage on Node 24 LTS, production dependencies only, non-root, with a readiness healthcheck', () => {
    expect(dockerfile.match(/^FROM node:24[-\w.]* AS build$/m)).not.toBeNull();
    expect(dockerfile.match(/^FROM node:24/gm)).toHaveLength(2);
    expect(dockerfile).toContain('npm prune --omit=dev');
    // npm ci links the file: dependency admin-api-schematics; the build stage must copy it first.
    expect(dockerfile.indexOf('COPY schematics')).toBeGreaterThan(-1);
    expect(dockerfile.indexOf('COPY schematics')).toBeLessThan(dockerfile.indexOf('RUN npm ci'));
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\/health\/ready/m);
  });

  it('the compose file parses and runs two app instances of one image on one PostgreSQL and one Redis', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['app', 'app2', 'postgres', 'redis']);
    // Built once: app builds the image, app2 runs it and never pulls it from a registry.
    expect(compose.services.app?.build).toEqual({ context: '..', dockerfile: 'docker/Dockerfile' });
    expect(compose.services.app2?.build).toBeUndefined();
    expect(compose.services.app2?.pull_policy).toBe('never');
    expect(compose.services.app2?.image).toBe(compose.services.app?.image);
    expect(compose.services.app?.image).toEqual(expect.any(String));
    // PostgreSQL's data outlives its container.
    expect(compose.services.postgres?.volumes).toEqual(['pgdata:/var/lib/postgresql/data']);
    expect(Object.keys(compose.volumes ?? {})).toEqual(['pgdata']);
    for (const name of ['app', 'app2']) {
      const app = compose.services[name];
      expect(app?.environment).toMatchObject({
        DATABASE_URL: expect.stringContaining('@postgres:5432/'),
        REDIS_URL: expect.stringContaining('redis://redis:6379'),
        JWT_SECRET: expect.any(String),
      });
      expect(app?.depends_on).toEqual({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_started' },
      });
    }
    expect(compose.services.postgres?.healthcheck?.test).toContain('pg_isready');
  });

  it('keeps local state and build output out of the build context', () => {
    expect(read('.dockerignore').split('\n')).toEqual(expect.arrayContaining(['node_modules', 'dist', '.data']));
  });

  describe('the replay (test/support/dockerfile.ts) is faithful where a real build would fail', () => {
    let context: string;
    beforeEach(() => {
      context = mkdtempSync(join(tmpdir(), 'admin-api-replay-'));
      mkdirSync(join(context, 'app', 'nested'), { recursive: true });
      writeFileSync(join(context, 'app', 'kept.txt'), 'kept');
      writeFileSync(join(context, 'app', 'nested', 'secret.env'), 'secret');
      writeFileSync(join(context, 'private.key'), 'key');
      writeFileSync(join(context, '.dockerignore'), 'private.key\napp/nested\n');
    });
    afterEach(() => rmSync(context, { recursive: true, force: true }));
    const replay = (lines: string[]) => {
      writeFileSync(join(context, 'Dockerfile'), `${lines.join('\n')}\n`);
      return replayDockerfile(join(context, 'Dockerfile'), context, join(context, 'scratch'));
    };

    it('COPY of a path .dockerignore excludes fails, and an excluded file inside a copied directory is absent', async () => {
      await expect(replay(['FROM node:24 AS build', 'WORKDIR /w', 'COPY private.key ./'])).rejects.toThrow(
        'COPY private.key: excluded by .dockerignore',
      );
      const [stage] = await replay([
        'FROM node:24 AS build',
        'WORKDIR /w',
        'COPY app ./app',
        'RUN test -f app/kept.txt',
      ]);
      expect(readFileSync(join(stage?.root ?? '', 'w', 'app', 'kept.txt'), 'utf8')).toBe('kept');
      await expect(
        replay(['FROM node:24', 'WORKDIR /w', 'COPY app ./app', 'RUN test -f app/nested/secret.env']),
      ).rejects.toThrow('RUN test -f app/nested/secret.env exited with 1');
    });

    it('an instruction it does not understand fails the replay', async () => {
      await expect(replay(['FROM node:24', 'ADD https://example.com/x /x'])).rejects.toThrow('does not understand ADD');
    });
  });
});
