import { Catch, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
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
  const { error, internal } = toApiError(exception);
  if (internal) {
    logger.error({ msg: 'unhandled error', request_id: request.id, route: request.routeOptions.url, err: exception });
  } else if (error.code === 'SERVICE_UNAVAILABLE') {
    logger.warn({
      msg: 'database unavailable',
      request_id: request.id,
      err: exception instanceof Error ? exception.message : String(exception),
    });
  }
  if (reply.sent) return;
  void reply
    .code(error.status)
    .headers(error.headers)
    .header('content-type', 'application/json; charset=utf-8')
    .send(errorBody(error, request.id));
}
