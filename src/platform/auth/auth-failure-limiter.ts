import { Inject, Injectable } from '@nestjs/common';
import { cacheKeys } from '../cache/cache-keys.js';
import { ApiError } from '../http/api-error.js';
import { SETTINGS, type Settings } from '../config/settings.js';
import { WindowCounters } from './window-counters.js';

const WINDOW_MS = 60_000;
const MAX_TRACKED = 10_000;

function rateLimited(resetInMs: number): ApiError {
  const seconds = Math.max(1, Math.ceil(resetInMs / 1000));
  return new ApiError(
    'RATE_LIMITED',
    'Too many failed authentications from this address; retry later',
    { scope: 'ip', retry_after_seconds: seconds },
    { 'Retry-After': String(seconds) },
  );
}

/**
 * The per-address limit on failed authentication (part 10). Failures are counted in a shared
 * one-minute window (Redis when configured); once an address is past the limit, this instance
 * answers its failing requests 429 until the window ends, without counting them again (no round
 * trip). Requests that authenticate are served all the same: many users share one address.
 */
@Injectable()
export class AuthFailureLimiter {
  private readonly blockedUntil = new Map<string, number>();
  private readonly limit: number;

  constructor(
    private readonly counters: WindowCounters,
    @Inject(SETTINGS) settings: Settings,
  ) {
    this.limit = settings.authFailureLimitPerMinute;
  }

  /** The 429 for a request that failed authentication while its address is blocked. */
  refusalFor(ip: string): ApiError | undefined {
    const until = this.blockedUntil.get(ip);
    if (until === undefined) return undefined;
    const left = until - Date.now();
    if (left > 0) return rateLimited(left);
    this.blockedUntil.delete(ip);
    return undefined;
  }

  /** Counts a failure; returns the 429 to send instead of the 401 once the address is past the limit. */
  async recordFailure(ip: string): Promise<ApiError | undefined> {
    const { count, resetInMs } = await this.counters.increment(cacheKeys.authFailures(ip), WINDOW_MS);
    if (count <= this.limit) return undefined;
    if (this.blockedUntil.size >= MAX_TRACKED) this.forgetExpired();
    this.blockedUntil.set(ip, Date.now() + resetInMs);
    return rateLimited(resetInMs);
  }

  private forgetExpired(): void {
    const now = Date.now();
    for (const [ip, until] of this.blockedUntil) if (until <= now) this.blockedUntil.delete(ip);
    // Still full of live blocks (a flood from many addresses): the shared counters keep counting.
    if (this.blockedUntil.size >= MAX_TRACKED) this.blockedUntil.clear();
  }
}
