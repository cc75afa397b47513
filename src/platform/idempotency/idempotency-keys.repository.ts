import { Injectable } from '@nestjs/common';
import { UnitOfWork } from '../database/unit-of-work.js';

export interface StoredResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | null;
}

export type Claim =
  | { readonly kind: 'claimed' }
  | { readonly kind: 'replay'; readonly response: StoredResponse }
  | { readonly kind: 'reused' }
  | { readonly kind: 'in_progress' };

export interface KeyScope {
  readonly actorId: number;
  readonly method: string;
  readonly path: string;
  readonly key: string;
}

/** A claim whose request died without completing (crash, kill) may be taken over after this. */
const ABANDONED_AFTER = "interval '5 minutes'";
const KEEP_FOR = "interval '24 hours'";

/** Idempotency keys in PostgreSQL, claimed atomically so concurrent requests with one key run once. */
@Injectable()
export class IdempotencyKeysRepository {
  constructor(private readonly uow: UnitOfWork) {}

  async claim(scope: KeyScope, fingerprint: string): Promise<Claim> {
    const db = this.uow.reader;
    const params = [scope.actorId, scope.method, scope.path, scope.key, fingerprint];
    // Inserts, or takes over an expired or abandoned key; a live one is left alone.
    const claimed = await db.query<unknown[]>(
      `INSERT INTO idempotency_keys (actor_id, method, path, key, fingerprint, expires_at) VALUES ($1, $2, $3, $4, $5, now() + ${KEEP_FOR})
       ON CONFLICT (actor_id, method, path, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, created_at = now(), expires_at = EXCLUDED.expires_at,
         completed_at = NULL, status = NULL, headers = NULL, body = NULL
       WHERE idempotency_keys.expires_at < now() OR (idempotency_keys.completed_at IS NULL AND idempotency_keys.created_at < now() - ${ABANDONED_AFTER})
       RETURNING 1`,
      params,
    );
    if (claimed.length > 0) return { kind: 'claimed' };
    const [existing] = await db.query<
      {
        fingerprint: string;
        completed_at: Date | null;
        status: number | null;
        headers: Record<string, string> | null;
        body: string | null;
      }[]
    >(
      'SELECT fingerprint, completed_at, status, headers, body FROM idempotency_keys WHERE actor_id = $1 AND method = $2 AND path = $3 AND key = $4',
      params.slice(0, 4),
    );
    // Vanished between the two statements (released by a failed first request): try again.
    if (existing === undefined) return this.claim(scope, fingerprint);
    if (existing.fingerprint !== fingerprint) return { kind: 'reused' };
    if (existing.completed_at === null || existing.status === null) return { kind: 'in_progress' };
    return {
      kind: 'replay',
      response: { status: existing.status, headers: existing.headers ?? {}, body: existing.body },
    };
  }

  async complete(scope: KeyScope, response: StoredResponse): Promise<void> {
    await this.uow.reader.query(
      'UPDATE idempotency_keys SET completed_at = now(), status = $5, headers = $6, body = $7 WHERE actor_id = $1 AND method = $2 AND path = $3 AND key = $4',
      [
        scope.actorId,
        scope.method,
        scope.path,
        scope.key,
        response.status,
        JSON.stringify(response.headers),
        response.body,
      ],
    );
  }

  /** Frees the key (a 400 or a 5xx is not kept: the client may fix the request or retry). */
  async release(scope: KeyScope): Promise<void> {
    await this.uow.reader.query(
      'DELETE FROM idempotency_keys WHERE actor_id = $1 AND method = $2 AND path = $3 AND key = $4 AND completed_at IS NULL',
      [scope.actorId, scope.method, scope.path, scope.key],
    );
  }

  /** Deletes expired keys, a batch at a time; returns how many went. */
  async purgeExpired(batch = 10_000): Promise<number> {
    const [, count] = await this.uow.reader.query<[unknown[], number]>(
      'DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency_keys WHERE expires_at < now() LIMIT $1))',
      [batch],
    );
    return count;
  }
}
