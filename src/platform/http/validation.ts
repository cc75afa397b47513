import { ValidationPipe, type ArgumentMetadata, type ValidationError } from '@nestjs/common';
import { ValidateIf } from 'class-validator';
import { ApiError, type FieldProblem } from './api-error.js';
import { splitBulkBody } from './bulk-items.js';

/** `isInt` → `int`, `whitelistValidation` → `unknown`: the rule names clients see in `details.fields`. */
function ruleName(constraint: string): string {
  if (constraint === 'whitelistValidation') return 'unknown';
  if (constraint === 'nestedValidation') return 'object';
  const stripped = constraint.startsWith('is') && constraint.length > 2 ? constraint.slice(2) : constraint;
  return stripped.charAt(0).toLowerCase() + stripped.slice(1);
}

/** At most this many problems are listed (a 100 000-item bulk could have hundreds of thousands). */
const MAX_PROBLEMS = 100;

export function flattenValidationErrors(errors: readonly ValidationError[], prefix = ''): FieldProblem[] {
  const problems: FieldProblem[] = [];
  // Depth-first without recursion or spreading: a body of 100 000 bad items must not overflow the stack.
  const pending: { error: ValidationError; prefix: string }[] = [...errors]
    .reverse()
    .map((error) => ({ error, prefix }));
  while (pending.length > 0 && problems.length < MAX_PROBLEMS) {
    const { error, prefix: parent } = pending.pop() as { error: ValidationError; prefix: string };
    const field = parent === '' ? error.property : `${parent}.${error.property}`;
    // A field that is absent fails every rule it has (string, length, format…): it is one problem.
    if (error.value === undefined && error.constraints !== undefined && !('whitelistValidation' in error.constraints)) {
      problems.push({ field, rule: 'required', message: `${field} is required` });
      continue;
    }
    for (const [constraint, message] of Object.entries(error.constraints ?? {})) {
      const text =
        constraint === 'whitelistValidation'
          ? `${field} is not an accepted field`
          : message.replace(error.property, field);
      problems.push({ field, rule: ruleName(constraint), message: text });
    }
    const children = error.children ?? [];
    for (let index = children.length - 1; index >= 0; index -= 1)
      pending.push({ error: children[index] as ValidationError, prefix: field });
  }
  return problems.slice(0, MAX_PROBLEMS);
}

/**
 * Path parameters are left to their own pipes. An absent body is an empty object: actions whose options are all optional accept no body,
 * and a create without a body reports each missing field instead of one opaque error.
 */
class ApiValidationPipe extends ValidationPipe {
  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // Path parameters are parsed by their own pipes (`ParseIdPipe`) from the raw text: a global
    // number conversion first would turn `01`, `0x1` or `1.0` into 1 before the id check sees it.
    if (metadata.type === 'param') return Promise.resolve(value);
    const body = metadata.type === 'body' && value === undefined ? {} : value;
    if (metadata.metatype === NoOptionsDto) return Promise.resolve(checkNoOptions(body));
    const bulk = splitBulkBody(metadata.metatype, body);
    if (bulk === undefined) return super.transform(body, metadata);
    // Every item passed its compiled rules: class-validator sees the body with one of them.
    return (super.transform(bulk.head, metadata) as Promise<Record<string, unknown>>).then((dto) =>
      Object.assign(dto, { [bulk.property]: bulk.items }),
    );
  }
}

/**
 * The body of an action that takes no options. class-validator cannot express "no properties"
 * (a class without rules is refused as an unknown value), so the pipe checks it itself.
 */
export class NoOptionsDto {}

/** Optional, but when present it may not be null (`null` would otherwise slip past `@IsOptional`). */
export const Present = (): PropertyDecorator => ValidateIf((_object: object, value: unknown) => value !== undefined);

function checkNoOptions(body: unknown): NoOptionsDto {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw ApiError.field('body', 'object', 'The body must be a JSON object');
  const extra = Object.keys(body);
  if (extra.length > 0)
    throw ApiError.validation(
      extra.map((field) => ({ field, rule: 'unknown', message: `${field} is not an accepted field` })),
    );
  return new NoOptionsDto();
}

/** The one global pipe: strict bodies (unknown properties are a 400), transformed into DTO classes. */
export function createValidationPipe(): ValidationPipe {
  return new ApiValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validateCustomDecorators: false,
    exceptionFactory: (errors) => ApiError.validation(flattenValidationErrors(errors)),
  });
}
