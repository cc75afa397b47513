import { Injectable, Param, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './api-error.js';

/** An id in a path (part 1): a positive safe integer in plain decimal, as the OpenAPI document says too. */
export const PATH_ID_PATTERN = '^[1-9][0-9]{0,15}$';
const ID = new RegExp(PATH_ID_PATTERN);

/** Whether a path segment is an id (what `ParseIdPipe` accepts). */
export function isPathId(value: string | undefined): value is string {
  return value !== undefined && ID.test(value) && Number.isSafeInteger(Number(value));
}

/** Path ids are positive integers; anything else is a 400 naming the parameter. */
@Injectable()
export class ParseIdPipe implements PipeTransform<string, number> {
  transform(value: string, metadata: ArgumentMetadata): number {
    const name = metadata.data ?? 'id';
    if (!isPathId(value)) {
      throw ApiError.field(name, 'int', `${name} must be a positive integer`);
    }
    return Number(value);
  }
}

/** `@IdParam('device_id') deviceId: number` */
export const IdParam = (name = 'id'): ParameterDecorator => Param(name, ParseIdPipe);

const PATH_IDS = new ParseIdPipe();

/** A path parameter parsed as the route's `@IdParam` would (400 naming it when it is not an id), for guards. */
export function pathId(request: FastifyRequest, name: string): number {
  return PATH_IDS.transform((request.params as Record<string, string | undefined>)[name] ?? '', {
    type: 'param',
    data: name,
  });
}
