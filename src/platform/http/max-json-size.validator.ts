import { ValidateBy, type ValidationOptions } from 'class-validator';

/** The value, serialised as JSON, is at most `bytes` long (UTF-8). */
export function MaxJsonSize(bytes: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxJsonSize',
      validator: {
        validate: (value: unknown) =>
          value === undefined || value === null || Buffer.byteLength(JSON.stringify(value), 'utf8') <= bytes,
        defaultMessage: (args) => `${args?.property ?? 'value'} must be at most ${bytes} bytes as JSON`,
      },
    },
    options,
  );
}
