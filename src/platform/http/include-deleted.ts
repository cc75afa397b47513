import { applyDecorators, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './api-error.js';

/**
 * `include_deleted` of a detail GET on a soft-deletable resource (part 3); any other query
 * parameter is a 400. Parsed by hand: detail reads are the hottest path, and the validation
 * pipe (class-transformer + class-validator) cost more there than everything it checks.
 */
const parseIncludeDeleted = createParamDecorator((_: unknown, context: ExecutionContext): boolean => {
  const query = context.switchToHttp().getRequest<FastifyRequest>().query as Record<string, unknown>;
  let includeDeleted = false;
  for (const [name, value] of Object.entries(query)) {
    if (name !== 'include_deleted') throw ApiError.field(name, 'unknown', `${name} is not a parameter of this route`);
    if (value !== 'true' && value !== 'false')
      throw ApiError.field(name, 'in', 'include_deleted must be true or false');
    includeDeleted = value === 'true';
  }
  return includeDeleted;
});

/** `@IncludeDeleted() includeDeleted: boolean` on a detail GET. */
export const IncludeDeleted = (): ParameterDecorator => parseIncludeDeleted();

/** Documents the `include_deleted` query parameter of a detail GET. */
export const ApiIncludeDeleted = (): MethodDecorator =>
  applyDecorators(
    ApiQuery({
      name: 'include_deleted',
      required: false,
      enum: ['true', 'false'],
      description: 'Return the record even if it is deleted (part 3)',
    }),
  );
