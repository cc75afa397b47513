import { applyDecorators } from '@nestjs/common';
import { ValidateBy, ValidateIf, type ValidationArguments } from 'class-validator';

/**
 * One of two alternative fields of a body (`user_id` or `group_id`): put on each of them, naming
 * the other. The field is validated when it is given, or when neither is (then it is `required`);
 * given together with the other it fails the rule `one_of`.
 */
export function OneOf(other: string): PropertyDecorator {
  return (target, property) => {
    const name = String(property);
    applyDecorators(
      ValidateIf((body: Record<string, unknown>) => body[name] !== undefined || body[other] === undefined),
      ValidateBy({
        name: 'oneOf',
        validator: {
          validate: (_value: unknown, args?: ValidationArguments) =>
            (args?.object as Record<string, unknown> | undefined)?.[other] === undefined,
          defaultMessage: () => `give either ${name} or ${other}, not both`,
        },
      }),
    )(target, property);
  };
}
