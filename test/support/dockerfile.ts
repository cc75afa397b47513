import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';

/*
 * Replays a Dockerfile without a Docker engine: each stage gets a scratch root, WORKDIR and ENV
 * are applied, COPY copies from the build context (or from an earlier stage's root), RUN runs in
 * the stage's working directory under this machine's Node. Anything it does not understand fails
 * the replay, so the file cannot grow a step the test silently skips.
 */
export interface Stage {
  readonly name: string | undefined;
  readonly root: string;
  workdir: string;
  readonly env: Record<string, string>;
  cmd: string[] | undefined;
  healthcheck: string | undefined;
}

const IGNORED = new Set(['EXPOSE', 'USER']);

function parseEnv(text: string): Record<string, string> {
  return Object.fromEntries(
    [...text.matchAll(/(\w+)=(\S+)/g)].map((match) => [match[1] as string, match[2] as string]),
  );
}

function run(command: string, cwd: string, env: Record<string, string>, log: (line: string) => void): Promise<void> {
  log(`RUN ${command}`);
  const child = spawn('/bin/sh', ['-c', command], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`RUN ${command} exited with ${code}:\n${output.slice(-4000)}`)),
    ),
  );
}

/** The build context's `.dockerignore` patterns (plain paths and `*` globs, as this project uses them). */
function ignoredBy(context: string): (path: string) => boolean {
  const file = join(context, '.dockerignore');
  if (!existsSync(file)) return () => false;
  const lines = readFileSync(file, 'utf8').split('\n');
  const patterns = lines
    .map((line) => line.trim().replace(/^\/+|\/+$/g, ''))
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => new RegExp(`^${line.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '[^/]*')}(/|$)`));
  return (path) => patterns.some((pattern) => pattern.test(posix.normalize(path).replace(/^\.\//, '')));
}

/** Replays `dockerfile` with `context` as the build context under `scratch`; returns the stages, last one final. */
export async function replayDockerfile(
  dockerfile: string,
  context: string,
  scratch: string,
  log: (line: string) => void = () => undefined,
): Promise<Stage[]> {
  const stages: Stage[] = [];
  const ignored = ignoredBy(context);
  const inStage = (stage: Stage, path: string): string => join(stage.root, posix.resolve(stage.workdir, path));
  for (const raw of readFileSync(dockerfile, 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [instruction = '', ...rest] = line.split(/\s+/);
    const args = line.slice(instruction.length).trim();
    if (instruction === 'FROM') {
      const name = /\bAS (\S+)$/i.exec(args)?.[1];
      const root = join(scratch, `stage-${stages.length}`);
      mkdirSync(root, { recursive: true });
      stages.push({ name, root, workdir: '/', env: {}, cmd: undefined, healthcheck: undefined });
      continue;
    }
    const stage = stages.at(-1);
    if (stage === undefined) throw new Error(`${instruction} before FROM`);
    if (instruction === 'WORKDIR') {
      stage.workdir = posix.resolve(stage.workdir, args);
      mkdirSync(join(stage.root, stage.workdir), { recursive: true });
    } else if (instruction === 'ENV') {
      Object.assign(stage.env, parseEnv(args));
    } else if (instruction === 'COPY') {
      const from = rest[0]?.startsWith('--from=') ? rest.shift()?.slice('--from='.length) : undefined;
      const dest = rest.pop();
      if (dest === undefined || rest.length === 0) throw new Error(`COPY needs a source and a destination: ${line}`);
      const source = from === undefined ? undefined : stages.find((candidate) => candidate.name === from);
      if (from !== undefined && source === undefined) throw new Error(`COPY --from=${from}: no such stage`);
      for (const path of rest) {
        // Docker never sends an ignored path to the builder: COPY of it fails, and inside a copied directory it is absent.
        if (source === undefined && ignored(path)) throw new Error(`COPY ${path}: excluded by .dockerignore`);
        const origin = source === undefined ? join(context, path) : join(source.root, path);
        const target = inStage(stage, dest.endsWith('/') ? posix.join(dest, posix.basename(path)) : dest);
        log(`COPY ${from === undefined ? '' : `--from=${from} `}${path} ${dest}`);
        cpSync(origin, target, {
          recursive: true,
          verbatimSymlinks: true,
          filter: (file) => source !== undefined || !ignored(relative(context, file)),
        });
      }
    } else if (instruction === 'RUN') {
      await run(args, join(stage.root, stage.workdir), stage.env, log);
    } else if (instruction === 'CMD') {
      stage.cmd = JSON.parse(args) as string[];
    } else if (instruction === 'HEALTHCHECK') {
      stage.healthcheck = /\bCMD (.+)$/.exec(args)?.[1];
    } else if (!IGNORED.has(instruction)) {
      throw new Error(`the replay does not understand ${instruction}: ${line}`);
    }
  }
  return stages;
}
