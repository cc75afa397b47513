import { Inject, Injectable } from '@nestjs/common';
import { cacheKeys } from '../cache/cache-keys.js';
import { CacheService } from '../cache/cache.service.js';
import { ApiError } from '../common/api-error.js';
import { SETTINGS, type Settings } from '../config/settings.js';

const WINDOW_MS = 60_000;

/**
 * The per-actor request limit (`RATE_LIMIT_PER_MINUTE`, part 10): a one-minute window counted
 * in Redis when configured, so every instance shares it; in process otherwise (or while Redis
 * is down, per instance).
 */
@Injectable()
export class ActorRateLimiter {
  private readonly limit: number;

  constructor(
    private readonly cache: CacheService,
    @Inject(SETTINGS) settings: Settings,
  ) {
    this.limit = settings.rateLimitPerMinute;
  }

  /** Counts one request; returns the 429 to send when the actor is over the limit. */
  async hit(actorId: number): Promise<ApiError | undefined> {
    const { count, resetInMs } = await this.cache.increment(cacheKeys.actorRequests(actorId), WINDOW_MS);
    if (count <= this.limit) return undefined;
    const seconds = Math.max(1, Math.ceil(resetInMs / 1000));
    return new ApiError('RATE_LIMITED', `More than ${this.limit} requests in a minute; retry later`, { scope: 'actor', limit_per_minute: this.limit, retry_after_seconds: seconds }, { 'Retry-After': String(seconds) });
  }
}
