/** V8's `gc` as `--expose-gc` defines it (absent without the flag). */
type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * Start-up leaves tens of megabytes of garbage (modules compiled, Nest's scan, the migrations) in
 * a heap V8 grew for it, and an idle server allocates too little for V8 to shrink it by itself.
 * One memory-reducing collection before the server listens returns it: resident memory after
 * start went from 161 to 125 MB (docs/performance.md). Needs `--expose-gc`, which the service's
 * flags carry (`npm start`, the image, the benchmarks); without it, nothing happens.
 */
export function releaseStartUpGarbage(): boolean {
  const collect = (globalThis as { gc?: Collect }).gc;
  if (collect === undefined) return false;
  collect({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return true;
}
