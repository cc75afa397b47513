import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './api-error.js';
import { NoContent } from './responses.js';

/** A parsed `If-Match`: absent (last write wins), `*` (any current version), or a list of versions. */
export type IfMatch = undefined | '*' | readonly number[];

export function parseIfMatch(header: string | string[] | undefined): IfMatch {
  if (header === undefined) return undefined;
  const value = (Array.isArray(header) ? header.join(',') : header).trim();
  if (value === '*') return '*';
  // Anything that is not a version we issued (`"7"`, also weak `W/"7"`) can never match: 412.
  return value
    .split(',')
    .map((tag) => /^(?:W\/)?"(\d{1,10})"$/.exec(tag.trim())?.[1])
    .filter((digits): digits is string => digits !== undefined)
    .map(Number);
}

/** Throws 412 `PRECONDITION_FAILED` unless the record's current version satisfies `If-Match`. */
export function assertIfMatch(ifMatch: IfMatch, currentVersion: number): void {
  if (ifMatch === undefined || ifMatch === '*') return;
  if (!ifMatch.includes(currentVersion)) throw ApiError.preconditionFailed(currentVersion);
}

/**
 * The 204 of a write with nothing to do (deleting a deleted record, restoring a live one). It
 * still answers to `If-Match` (part 9): a stale version is 412, never a silent 204.
 */
export function unchanged(ifMatch: IfMatch, currentVersion: number): NoContent {
  assertIfMatch(ifMatch, currentVersion);
  return NoContent.instance;
}

/** Documents `If-Match` on the route a parameter decorator reads it for (so generated clients can send it). */
export function documentIfMatch(target: object, key: string | symbol | undefined): void {
  if (key === undefined) return;
  const descriptor = Object.getOwnPropertyDescriptor(target, key);
  if (descriptor === undefined) return;
  ApiHeader({
    name: 'If-Match',
    required: false,
    description:
      'The record version this write expects, as its `ETag` gave it (`"7"`), or `*`; on a mismatch 412 `PRECONDITION_FAILED` and nothing changes. Without it the last write wins.',
    schema: { type: 'string', example: '"1"' },
  })(target, key, descriptor);
}

/** Route parameter decorator: the request's parsed `If-Match` header. */
export const IfMatchHeader = createParamDecorator(
  (_: unknown, context: ExecutionContext): IfMatch => {
    return parseIfMatch(context.switchToHttp().getRequest<FastifyRequest>().headers['if-match']);
  },
  [documentIfMatch],
);
