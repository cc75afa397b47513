import { Catch, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './api-error.js';
import { errorDialectOf } from './error-dialect.js';
import { errorBody, toApiError } from './error-mapping.js';

/** The single place where failures become the contract's error envelope. */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    sendError(exception, http.getRequest<FastifyRequest>(), http.getResponse<FastifyReply>(), this.logger);
  }
}

export function sendError(exception: unknown, request: FastifyRequest, reply: FastifyReply, logger: Logger): void {
  const mapped = toApiError(exception);
  const { internal } = mapped;
  // The limit a body exceeded is the route's own (the bulk routes take more than 1 MiB).
  const routeLimit = request.routeOptions.bodyLimit;
  const error =
    mapped.error.code === 'PAYLOAD_TOO_LARGE' && typeof routeLimit === 'number'
      ? ApiError.payloadTooLarge(routeLimit)
      : mapped.error;
  if (internal) {
    logger.error({
      msg: 'unhandled error',
      request_id: request.id,
      route: request.routeOptions.url,
      err: loggableError(exception),
    });
  } else if (error.code === 'SERVICE_UNAVAILABLE') {
    // The refusal names what was down (the database, the JWKS endpoint, …); the log line says the same.
    const dependency = typeof error.details.dependency === 'string' ? error.details.dependency : 'a dependency';
    logger.warn({
      msg: `${dependency} unavailable`,
      request_id: request.id,
      err: exception instanceof Error ? exception.message : String(exception),
    });
  }
  if (reply.sent) return;
  const dialect = errorDialectOf(request);
  if (dialect !== undefined) {
    const { status, body } = dialect.render(error, request.id);
    void reply
      .code(status)
      .headers(error.headers)
      .header('content-type', dialect.contentType)
      .send(JSON.stringify(body));
    return;
  }
  void reply
    .code(error.status)
    .headers(error.headers)
    .header('content-type', 'application/json; charset=utf-8')
    .send(errorBody(error, request.id));
}

/**
 * An error as it may be logged: a database error's bound parameters and its row `detail`
 * ("Failing row contains (…)") carry request values and stored secrets, so they stay out.
 */
export function loggableError(exception: unknown): unknown {
  if (!(exception instanceof Error)) return exception;
  const {
    parameters: _parameters,
    driverError: _driverError,
    detail: _detail,
    ...rest
  } = exception as Error & {
    parameters?: unknown;
    driverError?: unknown;
    detail?: unknown;
  };
  return { ...rest, type: exception.name, message: exception.message, stack: exception.stack };
}
