// Builds dist/ only when its inputs changed, so `npm start`, `npm test` and every CLI call on a
// built tree skip the compiler. The inputs' paths, sizes and modification times are hashed into
// dist/.build-stamp; the compiler is plain `tsc` (nest build with the tsc builder does nothing more
// here: no assets, no plugins), and the few plain .mjs modules under src/ (shared with scripts/) are
// copied beside its output. `--force` rebuilds anyway. Progress goes to stderr, so a CLI call's
// stdout still carries only its result.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const STAMP = join(root, 'dist', '.build-stamp');
const INPUT_DIRS = ['src', 'migrations'];
const INPUT_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

// Only what the compiler reads or the build copies: a data directory or an editor's file under src/ is not an input.
const SOURCE = /\.(ts|mts|mjs|json)$/;

function* filesUnder(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* filesUnder(path);
    else if (entry.isFile() && SOURCE.test(entry.name)) yield path;
  }
}

const inSources = (file) => INPUT_DIRS.some((dir) => file.startsWith(`${dir}/`));

/** The plain JavaScript modules among the inputs, copied as they are. */
function copiedOf(lines) {
  return lines.map((line) => line.split('\t')[0]).filter((file) => file.endsWith('.mjs') && inSources(file));
}

/** The compiled file of each TypeScript source and each copied module (what must exist for dist/ to be complete). */
function outputsOf(lines) {
  return [
    ...lines
      .map((line) => line.split('\t')[0])
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && inSources(file))
      .map((file) => join(root, 'dist', file.replace(/\.ts$/, '.js'))),
    ...copiedOf(lines).map((file) => join(root, 'dist', file)),
  ];
}

function inputs() {
  const files = [
    ...INPUT_DIRS.flatMap((dir) => [...filesUnder(join(root, dir))]),
    ...INPUT_FILES.map((f) => join(root, f)),
  ];
  return files
    .filter((file) => existsSync(file))
    .map((file) => {
      const { size, mtimeMs } = statSync(file);
      return `${relative(root, file)}\t${size}\t${Math.trunc(mtimeMs)}`;
    })
    .sort();
}

function readStamp() {
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return undefined;
  }
}

const current = inputs();
const digest = createHash('sha256').update(current.join('\n')).digest('hex');
const stamp = readStamp();
const force = process.argv.includes('--force');
const complete = () => outputsOf(current).every((file) => existsSync(file));
if (!force && stamp?.digest === digest && complete()) process.exit(0);

const sources = (lines) => new Set(lines.map((line) => line.split('\t')[0]));
const removed = stamp ? [...sources(stamp.inputs)].filter((file) => !sources(current).has(file)) : [];
const clean = () => {
  for (const dir of INPUT_DIRS) rmSync(join(root, 'dist', dir), { recursive: true, force: true });
  rmSync(join(root, 'dist', '.tsbuildinfo.build'), { force: true });
};
// No stamp (a fresh tree, or a build that never finished), a deleted source (a migration above
// all must not live on as a compiled file) or --force: build from clean.
if (!stamp?.digest || removed.length > 0 || force) clean();

process.stderr.write(stamp?.digest ? 'building dist/ (sources changed)…\n' : 'building dist/…\n');
const started = Date.now();
const compile = () => {
  const result = spawnSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' },
  );
  if (result.status === 0) {
    for (const file of copiedOf(current)) {
      mkdirSync(dirname(join(root, 'dist', file)), { recursive: true });
      copyFileSync(join(root, file), join(root, 'dist', file));
    }
  }
  return result;
};
let tsc = compile();
if (tsc.status === 0 && !complete()) {
  // The compiler's incremental state says nothing changed, but outputs were deleted: start clean.
  clean();
  tsc = compile();
}
if (tsc.stdout) process.stderr.write(tsc.stdout);
if (tsc.status !== 0 || !complete()) {
  process.stderr.write(`build failed (tsc exit ${tsc.status ?? tsc.signal}); dist/ is not up to date\n`);
  // Remember every source seen so far, so a source deleted before the next build is still cleaned.
  const seen = [...new Set([...(stamp?.inputs ?? []), ...current])];
  mkdirSync(dirname(STAMP), { recursive: true });
  writeFileSync(STAMP, JSON.stringify({ digest: null, inputs: seen }));
  process.exit(1);
}
writeFileSync(STAMP, JSON.stringify({ digest, inputs: current }));
process.stderr.write(`built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
