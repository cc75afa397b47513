import { Describe } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { IfMatchHeader, type IfMatch } from '../platform/http/etag.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { AcceptedResponse } from '../platform/http/responses.js';
import { NoOptionsDto } from '../platform/http/validation.js';
import { WebhookDeliveryDto } from './webhook-endpoint.dto.js';
import { WebhookEndpointsService } from './webhook-endpoints.service.js';

/** `/v1/admin/webhook-deliveries` (part 6.12): the one action on a delivery. */
@ApiTags('events')
@Controller('v1/admin/webhook-deliveries')
export class WebhookDeliveriesController {
  constructor(private readonly endpoints: WebhookEndpointsService) {}

  @Post(':id/retry')
  @Authorize({
    permission: 'webhooks.manage',
  })
  @Describe({
    summary: 'Attempt a delivery again now (202; a failed one gets one more attempt)',
    description: 'A delivery’s version for `If-Match` is its `attempts` (`"3"`), as the delivery log shows it.',
    returns: WebhookDeliveryDto,
    status: 202,
    errors: [400, 404, 409, 412],
  })
  retry(
    @IdParam() id: number,
    @Body() _options: NoOptionsDto,
    @IfMatchHeader() ifMatch: IfMatch,
  ): Promise<AcceptedResponse<WebhookDeliveryDto>> {
    return this.endpoints.retry(id, ifMatch);
  }
}
