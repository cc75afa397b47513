import { Injectable } from '@nestjs/common';
import { Projections } from '../platform/projections/projections.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { ResourceTable, withoutVersion } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { WebhookEndpointDto } from './webhook-endpoint.dto.js';
import { table } from '../platform/database/table.js';

const WEBHOOK_ENDPOINT_FAILURES = table('webhook_endpoint_failures');
const WEBHOOK_RUNS = table('webhook_runs');
/** Secrets rotated away: kept by the database's rotation trigger, swept here once past the overlap. */
const WEBHOOK_PREVIOUS_SECRETS = table('webhook_previous_secrets');

export interface WebhookEndpointRow extends WebhookEndpointDto {
  readonly version: number;
  /** Only on the tombstone a deletion leaves in the cache (the table has no such column). */
  readonly is_deleted?: true;
}

/**
 * What a delivery needs: where to, and the secrets that sign: the current one, then every one
 * rotated away less than 24 hours ago, newest first.
 */
export interface SigningEndpoint {
  readonly id: number;
  readonly url: string;
  readonly is_active: boolean;
  readonly secrets: string[];
  /** Its last round failed entirely: deliveries go one at a time (a probe) until one succeeds. */
  readonly failing: boolean;
  /** While failing: when the next probe may go. */
  readonly next_probe_at: Date | null;
  /** Not failing, or failing and its probe is due (by the database's clock). */
  readonly may_send: boolean;
  /** Rounds that failed in a row (0 when healthy): the probe's backoff step. */
  readonly failed_rounds: number;
}

/** An active endpoint, the event types it hears, and the feed position it was made at (it hears what came after). */
export interface Subscriber {
  readonly id: number;
  readonly event_types: string[];
  readonly feed_from: bigint;
}

/** A webhook URL as the feed and the audit trail show it: its origin, the rest elided. */
export function urlOnFeed(href: string | null): string | null {
  if (href === null) return null;
  const url = new URL(href);
  return url.pathname === '/' && url.search === '' ? url.href : `${url.origin}/…`;
}

// The secrets are never selected for a response: only `signing` reads them.
const RESOURCE_COLUMNS = `id, url, description, event_types, is_active, disabled_reason, created_at, updated_at, created_by, updated_by`;

export const WEBHOOK_ENDPOINT_LIST = listSpec({
  from: 'webhook_endpoints',
  select: RESOURCE_COLUMNS,
  sort: ['id', 'created_at', 'updated_at'],
  filters: { is_active: 'bool' },
  search: ['url', 'description'],
});

const WEBHOOK_ENDPOINTS = table('webhook_endpoints', { columns: RESOURCE_COLUMNS, list: WEBHOOK_ENDPOINT_LIST });

type WebhookEndpointColumn =
  'url' | 'description' | 'event_types' | 'is_active' | 'disabled_reason' | 'secret' | 'created_by' | 'updated_by';

/** Row access for webhook endpoints and their health. */
@Injectable()
export class WebhookEndpointsRepository extends ResourceTable<WebhookEndpointRow, WebhookEndpointColumn> {
  constructor(uow: UnitOfWork, projections: Projections) {
    super(
      { table: WEBHOOK_ENDPOINTS, type: 'webhook_endpoint', notFound: 'WEBHOOK_ENDPOINT_NOT_FOUND' },
      uow,
      projections,
    );
  }

  /**
   * On the feed (which other endpoints receive) and in the audit trail an endpoint's URL is only
   * its origin: receivers put tokens in paths and query strings.
   */
  protected override presentedOnFeed(row: WebhookEndpointRow): { readonly id: number } {
    const shown: Omit<WebhookEndpointRow, 'version' | 'url'> & { url: string | null } = {
      ...withoutVersion(row),
      url: urlOnFeed(row.url),
    };
    return shown;
  }

  /** The row under a lock; undefined once deleted (a worker's view: no 404 to answer). */
  async lockIfExists(tx: Tx, id: number): Promise<WebhookEndpointRow | undefined> {
    const [row] = await tx.db.query<WebhookEndpointRow[]>(
      `SELECT ${WEBHOOK_ENDPOINTS.selected} FROM webhook_endpoints WHERE id = $1 FOR UPDATE`,
      [id],
    );
    return row;
  }

  /** Deletes the endpoint for good (its failure record and old secrets go with it); answers the row as it was. */
  async remove(tx: Tx, id: number): Promise<WebhookEndpointRow> {
    const row = await this.lock(tx, id);
    await tx.write(
      [WEBHOOK_ENDPOINTS, WEBHOOK_ENDPOINT_FAILURES, WEBHOOK_PREVIOUS_SECRETS],
      'DELETE FROM webhook_endpoints WHERE id = $1',
      [id],
    );
    // The cached detail becomes a tombstone, newer than the entry it replaces.
    await this.changed(tx, [{ ...row, version: row.version + 1, is_deleted: true }]);
    // The feed shows the endpoint as the DELETE answers it: as it was.
    tx.noteResource('webhook_endpoint', this.presentedOnFeed(row));
    return row;
  }

  /**
   * A new secret. The database's rotation trigger keeps the one it replaces, which signs alongside
   * for the overlap (`webhook_secret_overlap()`, 24 hours), as do those rotated away before it.
   */
  async rotateSecret(tx: Tx, id: number, secret: string, updatedBy: number | null): Promise<WebhookEndpointRow> {
    const [rows] = await tx.write<[WebhookEndpointRow[], number]>(
      WEBHOOK_ENDPOINTS,
      `UPDATE webhook_endpoints SET secret = $2, updated_by = $3 WHERE id = $1 RETURNING ${WEBHOOK_ENDPOINTS.selected}`,
      [id, secret, updatedBy],
    );
    const row = rows[0];
    if (row === undefined) throw new Error(`webhook endpoint ${id} vanished under its lock`);
    await this.changed(tx, [row]);
    return row;
  }

  /** The endpoint with its signing secrets; undefined once deleted. */
  async signing(db: Tx['db'], id: number): Promise<SigningEndpoint | undefined> {
    const [row] = await db.query<SigningEndpoint[]>(
      `SELECT e.id, e.url, e.is_active, f.endpoint_id IS NOT NULL AS failing, f.next_probe_at,
              (f.next_probe_at IS NULL OR f.next_probe_at <= now()) AS may_send, COALESCE(f.failed_rounds, 0) AS failed_rounds,
              ARRAY[e.secret] || ARRAY(
                SELECT p.secret FROM webhook_previous_secrets p
                WHERE p.endpoint_id = e.id AND p.rotated_at > now() - webhook_secret_overlap()
                ORDER BY p.rotated_at DESC) AS secrets
       FROM webhook_endpoints e LEFT JOIN webhook_endpoint_failures f ON f.endpoint_id = e.id WHERE e.id = $1`,
      [id],
    );
    return row === undefined ? undefined : { ...row, id: Number(row.id) };
  }

  /** Forgets the secrets rotated away longer ago than the overlap (they no longer sign); answers how many. */
  async forgetRetiredSecrets(tx: Tx): Promise<number> {
    const [, count] = await tx.write<[unknown[], number]>(
      WEBHOOK_PREVIOUS_SECRETS,
      'DELETE FROM webhook_previous_secrets WHERE rotated_at <= now() - webhook_secret_overlap()',
    );
    return count;
  }

  /** Active endpoints and their event types (a small table, read once per fan-out step). */
  async subscribers(db: Tx['db']): Promise<Subscriber[]> {
    const rows = await db.query<{ id: number; event_types: string[]; feed_from: string }[]>(
      'SELECT id, event_types, feed_from::text AS feed_from FROM webhook_endpoints WHERE is_active ORDER BY id',
    );
    return rows.map((row) => ({ id: Number(row.id), event_types: row.event_types, feed_from: BigInt(row.feed_from) }));
  }

  /** The next probe may go now (a retry or a test asked by hand, which should not wait for it). */
  async probeNow(tx: Tx, id: number): Promise<void> {
    await tx.write(
      WEBHOOK_ENDPOINT_FAILURES,
      'UPDATE webhook_endpoint_failures SET next_probe_at = now() WHERE endpoint_id = $1',
      [id],
    );
  }

  /** A delivery succeeded: the endpoint is healthy again. */
  async recovered(tx: Tx, id: number): Promise<void> {
    await tx.write(WEBHOOK_ENDPOINT_FAILURES, 'DELETE FROM webhook_endpoint_failures WHERE endpoint_id = $1', [id]);
  }

  /**
   * A round failed entirely: the endpoint is failing (since the first such round) and is probed
   * again at `probeAt`; answers since when it fails.
   */
  async failedRound(tx: Tx, id: number, probeAt: Date): Promise<Date | undefined> {
    const [row] = await tx.write<{ failing_since: Date }[]>(
      WEBHOOK_ENDPOINT_FAILURES,
      `INSERT INTO webhook_endpoint_failures AS f (endpoint_id, failed_rounds, next_probe_at)
       SELECT id, 1, $2 FROM webhook_endpoints WHERE id = $1
       ON CONFLICT (endpoint_id) DO UPDATE SET failed_rounds = f.failed_rounds + 1, next_probe_at = EXCLUDED.next_probe_at
       RETURNING failing_since`,
      [id, probeAt],
    );
    return row?.failing_since;
  }

  /** Active endpoints whose deliveries have all failed for at least `days`. */
  async failingFor(db: Tx['db'], days: number): Promise<number[]> {
    const rows = await db.query<{ endpoint_id: number }[]>(
      `SELECT f.endpoint_id FROM webhook_endpoint_failures f JOIN webhook_endpoints e ON e.id = f.endpoint_id
       WHERE e.is_active AND f.failing_since <= now() - make_interval(days => $1)`,
      [days],
    );
    return rows.map((row) => Number(row.endpoint_id));
  }

  /** Takes the endpoint's run for `seconds` (or renews it); false while another run holds it. */
  async takeRun(tx: Tx, id: number, holder: string, seconds: number): Promise<boolean> {
    const rows = await tx.write<unknown[]>(
      WEBHOOK_RUNS,
      `INSERT INTO webhook_runs AS r (endpoint_id, holder, until) VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (endpoint_id) DO UPDATE SET holder = EXCLUDED.holder, until = EXCLUDED.until
         WHERE r.holder = EXCLUDED.holder OR r.until < now()
       RETURNING endpoint_id`,
      [id, holder, seconds],
    );
    return rows.length > 0;
  }

  async releaseRun(tx: Tx, id: number, holder: string): Promise<void> {
    await tx.write(WEBHOOK_RUNS, 'DELETE FROM webhook_runs WHERE endpoint_id = $1 AND holder = $2', [id, holder]);
  }
}
