import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Delete, Get, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { AcceptedResponse, ListResponse, ResourceResponse } from '../platform/http/responses.js';
import { NoOptionsDto } from '../platform/http/validation.js';
import { WEBHOOK_DELIVERY_LIST } from './webhook-deliveries.repository.js';
import {
  CreateWebhookEndpointDto,
  UpdateWebhookEndpointDto,
  WebhookDeliveryDto,
  WebhookEndpointDto,
  WebhookEndpointWithSecretDto,
} from './webhook-endpoint.dto.js';
import { WEBHOOK_ENDPOINT_LIST } from './webhook-endpoints.repository.js';
import { WebhookEndpointsService } from './webhook-endpoints.service.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';

/** `/v1/admin/webhook-endpoints` (part 6.12). */
@ApiTags('events')
@Controller('v1/admin/webhook-endpoints')
export class WebhookEndpointsController {
  constructor(private readonly endpoints: WebhookEndpointsService) {}

  @ListRoute({
    summary: 'List webhook endpoints (never a secret)',
    returns: WebhookEndpointDto,
    spec: WEBHOOK_ENDPOINT_LIST,
  })
  @Authorize({
    permission: 'webhooks.read',
  })
  @CachedRead({
    answerStored: true,
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<WebhookEndpointDto>> {
    return this.endpoints.list(query);
  }

  @Get(':id')
  @Authorize({
    permission: 'webhooks.read',
  })
  @Describe({
    summary: 'Get a webhook endpoint (cached; never its secret)',
    returns: WebhookEndpointDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('webhook_endpoint'),
    answerStored: true,
  })
  get(
    @IdParam() id: number,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<WebhookEndpointDto>> {
    return this.endpoints.get(id, prefetched);
  }

  @Post()
  @Authorize({
    permission: 'webhooks.manage',
  })
  @Describe({
    summary: 'Create a webhook endpoint; the answer shows its signing secret, once',
    description:
      'The URL must be https with a public host (422 `WEBHOOK_URL_FORBIDDEN` otherwise, unless the deployment allows http or private addresses). `event_types` is a list of types or `["*"]`.',
    returns: WebhookEndpointWithSecretDto,
    status: 201,
    errors: [400, 422],
  })
  create(@Body() dto: CreateWebhookEndpointDto): Promise<ResourceResponse<WebhookEndpointWithSecretDto>> {
    return this.endpoints.create(dto);
  }

  @Patch(':id')
  @Authorize({
    permission: 'webhooks.manage',
  })
  @Describe({
    summary: 'Change a webhook endpoint (is_active: true re-enables one disabled for failing)',
    returns: WebhookEndpointDto,
    errors: [400, 404, 412, 422],
  })
  update(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() dto: UpdateWebhookEndpointDto,
  ): Promise<ResourceResponse<WebhookEndpointDto>> {
    return this.endpoints.update(id, dto, ifMatch);
  }

  @Delete(':id')
  @Authorize({
    permission: 'webhooks.manage',
  })
  @Describe({
    summary: 'Delete a webhook endpoint for good (its deliveries stay readable 30 days)',
    description: '`data` is the endpoint as it was. Its pending deliveries end as failed.',
    returns: WebhookEndpointDto,
    errors: [400, 404, 412],
  })
  remove(@Write() { id, ifMatch }: RecordWrite): Promise<ResourceResponse<WebhookEndpointDto>> {
    return this.endpoints.remove(id, ifMatch);
  }

  @Post(':id/rotate-secret')
  @Authorize({
    permission: 'webhooks.manage',
  })
  @Describe({
    summary: 'Make a new signing secret, shown once; the old one keeps signing alongside for 24 hours',
    returns: WebhookEndpointWithSecretDto,
    errors: [400, 404, 412],
  })
  rotateSecret(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<ResourceResponse<WebhookEndpointWithSecretDto>> {
    return this.endpoints.rotateSecret(id, ifMatch);
  }

  @Post(':id/test')
  @Authorize({
    permission: 'webhooks.manage',
  })
  @Describe({
    summary: 'Queue a `webhook.test` event to this endpoint only (202 with its delivery)',
    description: 'Follow it in `GET /webhook-endpoints/{id}/deliveries?event_type=webhook.test`.',
    returns: WebhookDeliveryDto,
    status: 202,
    errors: [400, 404, 409, 412],
  })
  test(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<AcceptedResponse<WebhookDeliveryDto>> {
    return this.endpoints.test(id, ifMatch);
  }

  @ListRoute({
    path: ':id/deliveries',
    summary: 'List an endpoint’s deliveries, newest first',
    description: 'Readable for 30 days, also after the endpoint was deleted.',
    returns: WebhookDeliveryDto,
    spec: WEBHOOK_DELIVERY_LIST,
    errors: [404],
  })
  @Authorize({
    permission: 'webhooks.read',
  })
  deliveries(
    @IdParam() id: number,
    @Query() query: Record<string, unknown>,
  ): Promise<ListResponse<WebhookDeliveryDto>> {
    return this.endpoints.deliveryLog(id, query);
  }
}
