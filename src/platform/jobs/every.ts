/** A piece of work repeated on a timer by one instance, one run at a time. */
export interface Repeating {
  /** Stops the timer and waits for the run under way, if any. */
  stop(): Promise<void>;
}

/**
 * Runs `work` every `ms`, one run at a time on this instance: a slow run delays the next rather
 * than overlapping it. A failed run is handed to `failed` (the next run is the retry); the timer
 * never keeps the process alive.
 */
export function repeatEvery(ms: number, work: () => Promise<unknown>, failed: (error: unknown) => void): Repeating {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(work).catch(failed);
  }, ms).unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
