import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { cacheKeys } from '../cache/cache-keys.js';
import { ApiError } from '../http/api-error.js';
import { SETTINGS, type Settings } from '../config/settings.js';
import { WindowCounters } from './window-counters.js';

const WINDOW_MS = 60_000;
/** How often this instance adds its local counts to the shared ones. */
const FLUSH_EVERY_MS = 200;

interface ActorWindow {
  /** The shared count as of the last flush (every instance's requests). */
  shared: number;
  /** Requests counted here since the last flush. */
  pending: number;
  resetAt: number;
}

/**
 * The per-actor request limit (`RATE_LIMIT_PER_MINUTE`, part 10), a one-minute window shared by
 * every instance through Redis. Each request is counted in process at once (no round trip on
 * the request path); every 200 ms the local counts are added to the shared counters in Redis and
 * the totals read back. An actor spreading requests over several instances can therefore
 * overshoot by what the other instances accepted in the last 200 ms.
 */
@Injectable()
export class ActorRateLimiter implements OnModuleDestroy {
  private readonly limit: number;
  private readonly windows = new Map<number, ActorWindow>();
  private readonly flusher: NodeJS.Timeout;
  private flushing = false;

  constructor(
    private readonly counters: WindowCounters,
    @Inject(SETTINGS) settings: Settings,
  ) {
    this.limit = settings.rateLimitPerMinute;
    this.flusher = setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    this.flusher.unref();
  }

  /** Counts one request; returns the 429 to send when the actor is over the limit. */
  hit(actorId: number): ApiError | undefined {
    const now = Date.now();
    let window = this.windows.get(actorId);
    if (window === undefined || window.resetAt <= now) {
      window = { shared: 0, pending: 0, resetAt: now + WINDOW_MS };
      this.windows.set(actorId, window);
    }
    if (window.shared + window.pending >= this.limit) {
      const seconds = Math.max(1, Math.ceil((window.resetAt - now) / 1000));
      return new ApiError(
        'RATE_LIMITED',
        `More than ${this.limit} requests in a minute; retry later`,
        { scope: 'actor', limit_per_minute: this.limit, retry_after_seconds: seconds },
        { 'Retry-After': String(seconds) },
      );
    }
    window.pending += 1;
    return undefined;
  }

  /** Adds the local counts to the shared windows and learns every instance's totals. */
  async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      const now = Date.now();
      await Promise.all(
        [...this.windows].map(async ([actorId, window]) => {
          if (window.resetAt <= now) {
            if (window.pending === 0) this.windows.delete(actorId);
            return;
          }
          // Even with nothing to add, read the total: other instances may have counted this actor.
          const pending = window.pending;
          window.pending = 0;
          const total = await this.counters.increment(cacheKeys.actorRequests(actorId), WINDOW_MS, pending);
          window.shared = total.count;
          window.resetAt = Date.now() + total.resetInMs;
        }),
      );
    } finally {
      this.flushing = false;
    }
  }

  onModuleDestroy(): void {
    clearInterval(this.flusher);
  }
}
