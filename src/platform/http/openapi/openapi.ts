import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { refineDocument } from './document-refinements.js';

/** The OpenAPI document of the running app; its committed copy is `openapi.json` (checked for drift). */
export function buildOpenApi(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Admin API')
    .setDescription(
      'Users, device authorities, permissions, inbox messages and push for the admin portal. Contract: shared/design/API.md.',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
    .build();
  return refineDocument(
    SwaggerModule.createDocument(app, config, {
      operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}`,
    }),
  );
}

/**
 * Swagger UI at /docs and the JSON document at /docs/openapi.json. Given a factory, the document
 * is built on the first request for it: a server nobody reads the docs of never holds it (about
 * 8 MB of heap).
 */
export function serveDocs(app: INestApplication, document: OpenAPIObject | (() => OpenAPIObject)): void {
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
  });
}
