import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { ApiError, type FieldProblem } from './api-error.js';

/** `isInt` → `int`, `whitelistValidation` → `unknown`: the rule names clients see in `details.fields`. */
function ruleName(constraint: string): string {
  if (constraint === 'whitelistValidation') return 'unknown';
  if (constraint === 'nestedValidation') return 'object';
  const stripped = constraint.startsWith('is') && constraint.length > 2 ? constraint.slice(2) : constraint;
  return stripped.charAt(0).toLowerCase() + stripped.slice(1);
}

export function flattenValidationErrors(errors: readonly ValidationError[], prefix = ''): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const error of errors) {
    const field = prefix === '' ? error.property : `${prefix}.${error.property}`;
    for (const [constraint, message] of Object.entries(error.constraints ?? {})) {
      const text = constraint === 'whitelistValidation' ? `${field} is not an accepted field` : message.replace(error.property, field);
      problems.push({ field, rule: ruleName(constraint), message: text });
    }
    if (error.children !== undefined && error.children.length > 0) {
      problems.push(...flattenValidationErrors(error.children, field));
    }
  }
  return problems;
}

/** The one global pipe: strict bodies (unknown properties are a 400), transformed into DTO classes. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validateCustomDecorators: false,
    exceptionFactory: (errors) => ApiError.validation(flattenValidationErrors(errors)),
  });
}
