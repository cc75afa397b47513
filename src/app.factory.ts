import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Logger as Pino } from 'pino';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { Authentication } from './platform/auth/authentication.js';
import { EnvelopeInterceptor } from './platform/http/envelope.interceptor.js';
import { ApiExceptionFilter } from './platform/http/exception.filter.js';
import { configureHttp, createHttpAdapter } from './platform/http/http.js';
import { createPino, PinoNestLogger } from './platform/http/logger.js';
import { buildOpenApi, serveDocs } from './platform/http/openapi/openapi.js';
import { createValidationPipe } from './platform/http/validation.js';
import { completeIdempotentResponse, IdempotentRequests } from './platform/idempotency/idempotent-requests.js';
import { IdempotencyKeysRepository } from './platform/idempotency/idempotency-keys.repository.js';

export interface CreateAppOptions extends AppModuleOptions {
  readonly log?: Pino;
}

/** Builds the fully wired application (server and e2e tests use exactly this); not yet listening. */
export async function createApp(options: CreateAppOptions): Promise<NestFastifyApplication> {
  const log = options.log ?? createPino(options.settings.logLevel, options.settings.logFormat);
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot(options),
    createHttpAdapter(options.settings.trustProxyHops),
    {
      bodyParser: false,
      abortOnError: false,
      logger: new PinoNestLogger(log),
    },
  );
  // The stored idempotent response is completed after the status override, so it is the one sent.
  const authentication = app.get(Authentication);
  configureHttp(app, log, {
    afterStatus: completeIdempotentResponse(app.get(IdempotencyKeysRepository), new Logger('Idempotency')),
    authenticate: (request) => authentication.admit(request),
    corsOrigins: options.settings.corsOrigins,
  });
  app.useGlobalFilters(new ApiExceptionFilter());
  // Idempotency wraps the envelope: a replay is the stored envelope, sent as it was.
  app.useGlobalInterceptors(new EnvelopeInterceptor(app.get(IdempotentRequests)));
  app.useGlobalPipes(createValidationPipe());
  serveDocs(app, () => buildOpenApi(app));
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}
