import { Controller, Get } from '@nestjs/common';
import { Public } from '../platform/http/public.decorator.js';
import type { BareResponse } from '../platform/http/responses.js';
import { scimDocument } from './scim-responses.js';
import { ScimRoute } from './scim-route.decorator.js';
import { RESOURCE_TYPE_LIST, SCHEMA_LIST, SERVICE_PROVIDER_CONFIG } from './scim-schemas.js';

/**
 * `/scim/v2` discovery (RFC 7644 §4): what the service provider supports, readable without a
 * token so an identity provider can check it before it is configured (part 6.19).
 */
@Controller('scim/v2')
export class ScimV2Controller {
  @Get('ServiceProviderConfig')
  @Public()
  @ScimRoute({ summary: 'What this SCIM service provider supports', status: 200, errors: [] })
  config(): BareResponse {
    return scimDocument(SERVICE_PROVIDER_CONFIG);
  }

  @Get('ResourceTypes')
  @Public()
  @ScimRoute({ summary: 'The SCIM resource types: User and Group', status: 200, errors: [] })
  resourceTypes(): BareResponse {
    return scimDocument(RESOURCE_TYPE_LIST);
  }

  @Get('Schemas')
  @Public()
  @ScimRoute({ summary: 'The SCIM schemas: User, Group and the enterprise User extension', status: 200, errors: [] })
  schemas(): BareResponse {
    return scimDocument(SCHEMA_LIST);
  }
}
