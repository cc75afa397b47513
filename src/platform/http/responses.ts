/** Where a response's data came from: the cache, the database after a cache miss, or the database because the cache is down. */
export type CacheOutcome = 'hit' | 'miss' | 'bypass';

/** A resource already serialised to JSON (as stored in the cache), sent without re-parsing. */
export class RawJson {
  constructor(readonly json: string) {}
}

interface ResourceOptions {
  readonly cache?: CacheOutcome;
  /** Overrides the ETag taken from `data.version`. */
  readonly version?: number;
  readonly status?: 200 | 201;
  /** Path of the new resource, sent as `Location` on 201. */
  readonly location?: string;
  /** Fields of `data` shown in this response only: never stored, so an idempotent replay has them null. */
  readonly secretFields?: readonly string[];
}

/** A response whose `data` is one resource: gets an `ETag` from its version. */
export class ResourceResponse<T extends object> {
  constructor(
    readonly data: T | RawJson,
    readonly options: ResourceOptions = {},
  ) {}

  static created<T extends { id: number }>(data: T, basePath: string): ResourceResponse<T> {
    return new ResourceResponse(data, { status: 201, location: `${basePath}/${data.id}` });
  }
}

/** A page of a list (part 2). */
export class ListResponse<T> {
  constructor(
    /** The rows, or (a cached page) the rows already serialised, sent without re-parsing. */
    readonly items: readonly T[] | RawJson,
    readonly page: number,
    readonly page_size: number,
    readonly total: number,
    readonly total_exact: boolean,
    readonly cache?: CacheOutcome,
    /** More `meta` of this list (the access lists' `at` and `scope`). */
    readonly meta?: Readonly<Record<string, unknown>>,
  ) {}
}

/** A page of a feed read by cursor (`GET /events`): `meta.next_after` instead of pages and totals. */
export class FeedResponse<T> {
  constructor(
    readonly items: readonly T[],
    readonly nextAfter: string | null,
  ) {}
}

/** 204 with no body: deleting what is already deleted, restoring what is live. */
export class NoContent {
  static readonly instance = new NoContent();
}

/** A 202 for work handed to the job queue. */
export class AcceptedResponse<T extends object> {
  constructor(
    readonly data: T,
    readonly location: string,
    readonly retryAfterSeconds: number,
  ) {}
}

/**
 * A response outside the envelope, in another protocol's own shape (SCIM, part 6.19): its status,
 * media type and headers as given; still with X-Request-Id and Cache-Control like every answer.
 */
export class BareResponse {
  constructor(
    readonly body: object,
    readonly options: {
      readonly status?: 200 | 201;
      readonly contentType: string;
      readonly headers?: Readonly<Record<string, string>>;
    },
  ) {}
}
