import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { creationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, diffChanges, type Changes } from '../platform/audit/audit.service.js';
import { ApiError } from '../platform/http/api-error.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { parseListQuery } from '../platform/http/list/list-query.parser.js';
import { currentRequest } from '../platform/http/request-context.js';
import { AcceptedResponse, ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { ListPages } from '../platform/projections/list-pages.js';
import { respondWith } from '../platform/projections/resource-table.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { WebhookDeliveriesRepository, WEBHOOK_DELIVERY_LIST } from './webhook-deliveries.repository.js';
import type {
  CreateWebhookEndpointDto,
  UpdateWebhookEndpointDto,
  WebhookDeliveryDto,
  WebhookEndpointDto,
  WebhookEndpointWithSecretDto,
} from './webhook-endpoint.dto.js';
import { urlOnFeed, WebhookEndpointsRepository, type WebhookEndpointRow } from './webhook-endpoints.repository.js';
import { WebhookRuns } from './webhook-runs.js';
import { newWebhookSecret } from './webhook-signature.js';
import { checkWebhookUrl, type UrlPolicy } from './webhook-urls.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

const AUDITED_FIELDS = ['url', 'description', 'event_types', 'is_active', 'disabled_reason'] as const;

/** Webhook endpoints (part 6.12): their lifecycle, secrets, test deliveries and delivery log. */
@Injectable()
export class WebhookEndpointsService {
  private readonly policy: UrlPolicy;

  constructor(
    @Inject(SETTINGS) settings: Settings,
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly pages: ListPages,
    private readonly runs: WebhookRuns,
  ) {
    this.policy = { allowHttp: settings.webhookAllowHttp, allowPrivate: settings.webhookAllowPrivate };
  }

  list(query: Record<string, unknown>): Promise<ListResponse<WebhookEndpointDto>> {
    return this.endpoints.list(query);
  }

  get(id: number, prefetched?: Prefetched): Promise<ResourceResponse<WebhookEndpointDto>> {
    return this.endpoints.detail(id, false, prefetched);
  }

  /** 201 with the secret, shown in this response only. */
  async create(dto: CreateWebhookEndpointDto): Promise<ResourceResponse<WebhookEndpointWithSecretDto>> {
    const url = await checkWebhookUrl(dto.url, this.policy);
    const eventTypes = checkedTypes(dto.event_types);
    const secret = newWebhookSecret();
    const row = await this.uow.run(async (tx) => {
      const created = await this.endpoints.insert(tx, {
        url: url.href,
        description: dto.description ?? null,
        event_types: eventTypes,
        secret,
        ...creationStamp(tx),
      });
      if (created === undefined) throw new Error('webhook endpoint insert returned no row');
      await this.audit.record(tx, 'webhook_endpoint.create', created.id, {
        changes: auditedChanges(null, created),
      });
      return created;
    });
    return withSecret(row, secret, { status: 201, location: `/v1/admin/webhook-endpoints/${row.id}` });
  }

  async update(
    id: number,
    dto: UpdateWebhookEndpointDto,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<WebhookEndpointDto>> {
    const url = dto.url === undefined ? undefined : (await checkWebhookUrl(dto.url, this.policy)).href;
    const eventTypes = dto.event_types === undefined ? undefined : checkedTypes(dto.event_types);
    const row = await this.uow.run(async (tx) => {
      const before = await this.endpoints.lock(tx, id);
      assertIfMatch(ifMatch, before.version);
      const enabling = dto.is_active === true && !before.is_active;
      const wanted: WebhookEndpointRow = {
        ...before,
        ...(url === undefined ? {} : { url }),
        ...(dto.description === undefined ? {} : { description: dto.description }),
        ...(eventTypes === undefined ? {} : { event_types: eventTypes }),
        ...(dto.is_active === undefined ? {} : { is_active: dto.is_active }),
        // Switched on again, it starts afresh; switched off by hand, it says nothing of failing.
        ...(dto.is_active === undefined ? {} : { disabled_reason: null }),
      };
      const changes = auditedChanges(before, wanted);
      if (Object.keys(changes).length === 0) return before;
      const after = await this.endpoints.patch(tx, id, {
        url: wanted.url,
        description: wanted.description,
        event_types: wanted.event_types,
        is_active: wanted.is_active,
        disabled_reason: wanted.disabled_reason,
        ...updateStamp(tx),
      });
      // Enabled again, or pointed elsewhere: whatever failed before says nothing about it now.
      if (enabling || after.url !== before.url) await this.endpoints.recovered(tx, id);
      if (before.is_active && !after.is_active)
        await this.deliveries.failPending(tx, id, 'endpoint deactivated before delivery');
      await this.audit.record(tx, 'webhook_endpoint.update', id, { before, changes });
      return after;
    });
    return respondWith(row);
  }

  /** Deleted for good; its deliveries stay readable (and pending ones end as failed). */
  async remove(id: number, ifMatch: IfMatch): Promise<ResourceResponse<WebhookEndpointDto>> {
    const row = await this.uow.run(async (tx) => {
      const before = await this.endpoints.lock(tx, id);
      assertIfMatch(ifMatch, before.version);
      await this.endpoints.remove(tx, id);
      await this.deliveries.failPending(tx, id, 'endpoint deleted before delivery');
      await this.audit.record(tx, 'webhook_endpoint.delete', id, {
        before,
        changes: Object.fromEntries(
          Object.entries(auditedChanges(null, before)).map(([field, [, was]]) => [field, [was, null]]),
        ),
      });
      return before;
    });
    return respondWith(row);
  }

  /** A new secret; every one rotated away less than 24 hours ago keeps signing alongside it. */
  async rotateSecret(id: number, ifMatch: IfMatch): Promise<ResourceResponse<WebhookEndpointWithSecretDto>> {
    const secret = newWebhookSecret();
    const row = await this.uow.run(async (tx) => {
      const before = await this.endpoints.lock(tx, id);
      assertIfMatch(ifMatch, before.version);
      const after = await this.endpoints.rotateSecret(tx, id, secret, updateStamp(tx).updated_by);
      // The secrets themselves are never recorded; that a rotation happened is.
      await this.audit.record(tx, 'webhook_endpoint.rotate_secret', id, {
        before,
        changes: { secret: ['(previous)', '(new)'] },
      });
      return after;
    });
    return withSecret(row, secret);
  }

  /** 202: a `webhook.test` event queued to this endpoint only. */
  async test(id: number, ifMatch: IfMatch): Promise<AcceptedResponse<WebhookDeliveryDto>> {
    const context = currentRequest();
    const delivery = await this.uow.run(async (tx) => {
      const endpoint = await this.endpoints.lock(tx, id);
      assertIfMatch(ifMatch, endpoint.version);
      if (!endpoint.is_active)
        throw new ApiError('INVALID_STATE_TRANSITION', 'The webhook endpoint is not active: enable it first', {
          from: 'inactive',
          action: 'test',
        });
      const event = {
        id: `test-${randomUUID()}`,
        type: 'webhook.test',
        occurred_at: new Date().toISOString(),
        actor_id: context?.actor_id ?? null,
        request_id: context?.request_id ?? null,
        resource_type: 'webhook_endpoint',
        resource_id: id,
        data: {},
      };
      await this.endpoints.probeNow(tx, id);
      await this.deliveries.insert(tx, [{ endpoint_id: id, event }]);
      await this.audit.record(tx, 'webhook_endpoint.test', id, { changes: {} });
      await this.runs.request(tx, id);
      return this.deliveries.byEvent(tx, id, event.id);
    });
    return new AcceptedResponse(delivery, `/v1/admin/webhook-endpoints/${id}/deliveries?event_type=webhook.test`, 1);
  }

  /** The endpoint's deliveries, newest first; readable after the endpoint was deleted. */
  async deliveryLog(id: number, query: Record<string, unknown>): Promise<ListResponse<WebhookDeliveryDto>> {
    parseListQuery(WEBHOOK_DELIVERY_LIST, query); // a bad query is a 400 before the endpoint's 404
    if ((await this.endpoints.read(id)) === undefined && !(await this.deliveries.anyFor(this.uow.reader, id)))
      throw ApiError.notFound('WEBHOOK_ENDPOINT_NOT_FOUND', id);
    return this.pages.read<WebhookDeliveryDto>(WEBHOOK_DELIVERY_LIST, query, {
      where: 'd.endpoint_id = $1',
      params: [id],
    });
  }

  /** 202: the delivery is due again now (a failed one gets one more attempt). */
  /**
   * Due again now. A delivery has no version column: its `attempts` is its version for
   * `If-Match`, readable in the delivery log, and it moves whenever an attempt changed what the
   * caller saw (a retry by hand only makes it due, which repeating changes nothing about).
   */
  async retry(deliveryId: number, ifMatch: IfMatch): Promise<AcceptedResponse<WebhookDeliveryDto>> {
    const delivery = await this.uow.run(async (tx) => {
      const before = await this.deliveries.lock(tx, deliveryId);
      assertIfMatch(ifMatch, before.attempts);
      const endpoint = await this.endpoints.find(tx.db, before.endpoint_id);
      if (endpoint === undefined) throw ApiError.notFound('WEBHOOK_ENDPOINT_NOT_FOUND', before.endpoint_id);
      if (!endpoint.is_active)
        throw new ApiError('INVALID_STATE_TRANSITION', 'The webhook endpoint is not active: enable it first', {
          from: 'inactive',
          action: 'retry',
        });
      await this.endpoints.probeNow(tx, before.endpoint_id);
      const after = await this.deliveries.requeue(tx, deliveryId);
      await this.audit.record(tx, 'webhook_delivery.retry', deliveryId, {
        changes: diffChanges(before, after, ['state', 'next_attempt_at']),
      });
      await this.runs.request(tx, before.endpoint_id);
      return after;
    });
    return new AcceptedResponse(delivery, `/v1/admin/webhook-endpoints/${delivery.endpoint_id}/deliveries`, 1);
  }
}

/** The changes as the audit trail keeps them: a URL only as its origin (see `urlOnFeed`). */
function auditedChanges(before: WebhookEndpointRow | null, after: WebhookEndpointRow): Changes {
  const masked = (row: WebhookEndpointRow): WebhookEndpointRow => ({ ...row, url: urlOnFeed(row.url) ?? '' });
  const changes: Record<string, readonly [unknown, unknown]> = diffChanges(before, after, AUDITED_FIELDS);
  if (changes['url'] !== undefined) {
    const [was, now] = [before === null ? null : masked(before).url, masked(after).url];
    // The same origin on both sides still says the URL changed.
    changes['url'] = [was, now];
  }
  return changes;
}

/** `["*"]` stands alone; duplicates go. */
function checkedTypes(types: readonly string[]): string[] {
  const unique = [...new Set(types)];
  if (unique.includes('*') && unique.length > 1)
    throw ApiError.field('event_types', 'all_alone', 'event_types is either ["*"] or a list of types, not both');
  return unique;
}

function withSecret(
  row: WebhookEndpointRow,
  secret: string,
  options: { status?: 201; location?: string } = {},
): ResourceResponse<WebhookEndpointWithSecretDto> {
  const { version, ...resource } = row;
  return new ResourceResponse({ ...resource, secret }, { ...options, version, secretFields: ['secret'] });
}
