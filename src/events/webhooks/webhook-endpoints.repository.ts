import { Injectable } from '@nestjs/common';
import { CacheService } from '../../cache/cache.service.js';
import { listSpec } from '../../common/list/list-spec.js';
import { ResourceTable, withoutVersion } from '../../database/resource-table.js';
import { UnitOfWork, type Tx } from '../../database/unit-of-work.js';
import type { WebhookEndpointDto } from './webhook-endpoint.dto.js';

export interface WebhookEndpointRow extends WebhookEndpointDto {
  readonly version: number;
  /** Only on the tombstone a deletion leaves in the cache (the table has no such column). */
  readonly is_deleted?: true;
}

/** What a delivery needs: where to, and the secrets that sign (two for 24 hours after a rotation). */
export interface SigningEndpoint {
  readonly id: number;
  readonly url: string;
  readonly is_active: boolean;
  readonly secrets: string[];
}

/** An active endpoint, the event types it hears, and the feed position it was made at (it hears what came after). */
export interface Subscriber {
  readonly id: number;
  readonly event_types: string[];
  readonly feed_from: bigint;
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

type WebhookEndpointColumn =
  | 'url'
  | 'description'
  | 'event_types'
  | 'is_active'
  | 'disabled_reason'
  | 'secret'
  | 'previous_secret'
  | 'previous_secret_until'
  | 'created_by'
  | 'updated_by';

/** Row access for webhook endpoints and their health. */
@Injectable()
export class WebhookEndpointsRepository extends ResourceTable<WebhookEndpointRow, WebhookEndpointColumn> {
  constructor(uow: UnitOfWork, cache: CacheService) {
    super(
      {
        table: 'webhook_endpoints',
        columns: `version, ${RESOURCE_COLUMNS}`,
        type: 'webhook_endpoint',
        notFound: 'WEBHOOK_ENDPOINT_NOT_FOUND',
        list: WEBHOOK_ENDPOINT_LIST,
      },
      uow,
      cache,
    );
  }

  /** Deletes the endpoint for good (its failure record goes with it); answers the row as it was. */
  async remove(tx: Tx, id: number): Promise<WebhookEndpointRow> {
    const row = await this.lock(tx, id);
    tx.wrote('webhook_endpoints', 'webhook_endpoint_failures');
    await tx.db.query('DELETE FROM webhook_endpoints WHERE id = $1', [id]);
    // The cached detail becomes a tombstone, newer than the entry it replaces.
    await this.changed(tx, [{ ...row, version: row.version + 1, is_deleted: true }]);
    // The feed shows the endpoint as the DELETE answers it: as it was.
    tx.noteResource('webhook_endpoint', withoutVersion(row));
    return row;
  }

  /** A new secret; the current one signs alongside it for `overlapHours` (an older one stops now). */
  async rotateSecret(
    tx: Tx,
    id: number,
    secret: string,
    overlapHours: number,
    updatedBy: number | null,
  ): Promise<WebhookEndpointRow> {
    tx.wrote('webhook_endpoints');
    const [rows] = await tx.db.query<[WebhookEndpointRow[], number]>(
      `UPDATE webhook_endpoints
       SET previous_secret = secret, previous_secret_until = now() + make_interval(hours => $3), secret = $2, updated_by = $4
       WHERE id = $1 RETURNING version, ${RESOURCE_COLUMNS}`,
      [id, secret, overlapHours, updatedBy],
    );
    const row = rows[0];
    if (row === undefined) throw new Error(`webhook endpoint ${id} vanished under its lock`);
    await this.changed(tx, [row]);
    return row;
  }

  /** The endpoint with its signing secrets; undefined once deleted. */
  async signing(db: Tx['db'], id: number): Promise<SigningEndpoint | undefined> {
    const [row] = await db.query<SigningEndpoint[]>(
      `SELECT id, url, is_active,
              array_remove(ARRAY[secret, CASE WHEN previous_secret_until > now() THEN previous_secret END], NULL) AS secrets
       FROM webhook_endpoints WHERE id = $1`,
      [id],
    );
    return row === undefined ? undefined : { ...row, id: Number(row.id) };
  }

  /** Active endpoints and their event types (a small table, read once per fan-out step). */
  async subscribers(db: Tx['db']): Promise<Subscriber[]> {
    const rows = await db.query<{ id: number; event_types: string[]; feed_from: string }[]>(
      'SELECT id, event_types, feed_from::text AS feed_from FROM webhook_endpoints WHERE is_active ORDER BY id',
    );
    return rows.map((row) => ({ id: Number(row.id), event_types: row.event_types, feed_from: BigInt(row.feed_from) }));
  }

  /** A delivery succeeded: the endpoint is healthy again. */
  async recovered(tx: Tx, id: number): Promise<void> {
    tx.wrote('webhook_endpoint_failures');
    await tx.db.query('DELETE FROM webhook_endpoint_failures WHERE endpoint_id = $1', [id]);
  }

  /** A delivery failed: when the endpoint has been failing since at least `days` ago, answers since when. */
  async failingFor(tx: Tx, id: number, days: number): Promise<Date | undefined> {
    tx.wrote('webhook_endpoint_failures');
    await tx.db.query(
      `INSERT INTO webhook_endpoint_failures (endpoint_id) SELECT id FROM webhook_endpoints WHERE id = $1
       ON CONFLICT (endpoint_id) DO NOTHING`,
      [id],
    );
    const [row] = await tx.db.query<{ failing_since: Date }[]>(
      `SELECT failing_since FROM webhook_endpoint_failures
       WHERE endpoint_id = $1 AND failing_since <= now() - make_interval(days => $2)`,
      [id, days],
    );
    return row?.failing_since;
  }
}
