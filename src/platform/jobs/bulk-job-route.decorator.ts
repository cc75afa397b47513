import { applyDecorators, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiEnvelope } from '../http/openapi/api-envelope.decorator.js';
import { BULK_CHUNK, BULK_JOB_MAX_ITEMS, prefersAsync } from './bulk-jobs.service.js';
import { AcceptedJobDto } from './jobs.dto.js';

/** Documents a bulk route's job form: `Prefer: respond-async` and its 202 (part 6.6). */
export function BulkJobRoute(): MethodDecorator {
  return applyDecorators(
    ApiHeader({
      name: 'Prefer',
      required: false,
      description: `\`respond-async\`: run as a job (up to ${BULK_JOB_MAX_ITEMS} items, else ${BULK_CHUNK}); answers 202 with the job, whose per-item results \`GET /v1/admin/jobs/{job_id}/results\` pages.`,
      schema: { type: 'string', example: 'respond-async' },
    }),
    ApiEnvelope(AcceptedJobDto, { status: 202 }),
  );
}

/**
 * Whether the request asked for the answer later (`Prefer: respond-async`). A parameter decorator
 * of its own rather than `@Headers('prefer')`, which the document would list as a required header.
 */
export const PrefersAsync = createParamDecorator((_: unknown, context: ExecutionContext): boolean =>
  prefersAsync([context.switchToHttp().getRequest<FastifyRequest>().headers.prefer ?? []].flat().join(',')),
);
