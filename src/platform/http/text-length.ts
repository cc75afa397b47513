import { buildMessage, ValidateBy, type ValidationOptions } from 'class-validator';

/*
 * Length rules that count characters as PostgreSQL's `length()` does: code points. The columns'
 * CHECKs count that way, and class-validator's own `Length`/`MaxLength`/`MinLength` (validator.js)
 * do not count the variation selectors U+FE0E and U+FE0F, so a reason of 500 "a\uFE0F" passed
 * validation and then broke the CHECK: a 500 instead of a 400. Same names and rule names
 * (`length`, `maxLength`, `minLength` in `details.fields`), same messages.
 */

/** Code points of a string (a lone surrogate counts one, as the driver sends it as U+FFFD). */
export function characters(value: string): number {
  let count = 0;
  for (let index = 0; index < value.length; index += 1) {
    const unit = value.charCodeAt(index);
    // A high surrogate followed by a low one is one code point.
    if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < value.length) {
      const next = value.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) index += 1;
    }
    count += 1;
  }
  return count;
}

export function Length(min: number, max: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isLength',
      constraints: [min, max],
      validator: {
        validate: (value: unknown) => typeof value === 'string' && characters(value) >= min && characters(value) <= max,
        defaultMessage: buildMessage((each, args) => {
          const value: unknown = args?.value;
          // Not a string (a number, a repeated query parameter): the whole range, as class-validator says.
          if (typeof value !== 'string')
            return `${each}$property must be longer than or equal to $constraint1 and shorter than or equal to $constraint2 characters`;
          return characters(value) > max
            ? `${each}$property must be shorter than or equal to $constraint2 characters`
            : `${each}$property must be longer than or equal to $constraint1 characters`;
        }, options),
      },
    },
    options,
  );
}

export function MaxLength(max: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxLength',
      constraints: [max],
      validator: {
        validate: (value: unknown) => typeof value === 'string' && characters(value) <= max,
        defaultMessage: buildMessage(
          (each) => `${each}$property must be shorter than or equal to $constraint1 characters`,
          options,
        ),
      },
    },
    options,
  );
}

export function MinLength(min: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'minLength',
      constraints: [min],
      validator: {
        validate: (value: unknown) => typeof value === 'string' && characters(value) >= min,
        defaultMessage: buildMessage(
          (each) => `${each}$property must be longer than or equal to $constraint1 characters`,
          options,
        ),
      },
    },
    options,
  );
}
