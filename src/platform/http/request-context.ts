import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

/** What every layer may need to know about the request it runs in. */
export interface RequestContext {
  readonly request_id: string;
  readonly ip: string;
  /** The authenticated user, set by the auth guard; null for anonymous and system flows. */
  actor_id: number | null;
  /**
   * What this HTTP request's cache reads have cost so far (part 7: they share one budget), from
   * authentication on. Absent in jobs and the CLI, whose calls each have the budget.
   */
  readonly cache?: RequestCacheWork;
}

/** One request's waits on the cache. */
export interface RequestCacheWork {
  /** Milliseconds spent waiting on cache reads. */
  spentMs: number;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runInRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

/** Runs `fn` outside any request's context: for timers armed by a request that serve later work. */
export function outsideRequests<T>(fn: () => T): T {
  return storage.exit(fn);
}

/** The acting user's id, or null outside an authenticated request (system flows, CLI). */
export function currentActorId(): number | null {
  return storage.getStore()?.actor_id ?? null;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Adopts a well-formed client `X-Request-Id`, otherwise generates a UUID. */
export function resolveRequestId(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value !== undefined && REQUEST_ID.test(value) ? value : randomUUID();
}
