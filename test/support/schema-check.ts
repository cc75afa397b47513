/** The subset of OpenAPI 3 schema the service's document uses. */
export interface Schema {
  $ref?: string;
  allOf?: Schema[];
  anyOf?: Schema[];
  type?: string;
  format?: string;
  enum?: unknown[];
  nullable?: boolean;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: boolean | Schema;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
}

export type Components = Record<string, Schema>;

export function resolve(schema: Schema, components: Components): Schema {
  if (schema.$ref !== undefined)
    return resolve(components[schema.$ref.replace('#/components/schemas/', '')] ?? {}, components);
  if (schema.allOf !== undefined && schema.allOf.length === 1 && schema.allOf[0] !== undefined) {
    return resolve(schema.allOf[0], components);
  }
  return schema;
}

const DATE_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

/**
 * Checks a value against a schema; returns the problems (empty when it matches). Properties
 * the schema does not name are problems too: the document must describe everything sent.
 */
export function check(schema: Schema, value: unknown, components: Components, at = '$'): string[] {
  const resolved = resolve(schema, components);
  if (resolved.anyOf !== undefined) {
    const branches = resolved.anyOf.map((branch) => check(branch, value, components, at));
    return branches.some((problems) => problems.length === 0) ? [] : (branches[0] ?? []);
  }
  if (value === null) return resolved.nullable === true ? [] : [`${at}: null is not allowed`];
  if (resolved.enum !== undefined && !resolved.enum.includes(value))
    return [`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(resolved.enum)}`];
  switch (resolved.type) {
    case 'string':
      if (typeof value !== 'string') return [`${at}: expected a string`];
      return resolved.format === 'date-time' && !DATE_TIME.test(value) ? [`${at}: ${value} is not a date-time`] : [];
    case 'number':
    case 'integer':
      return typeof value === 'number' ? [] : [`${at}: expected a number`];
    case 'boolean':
      return typeof value === 'boolean' ? [] : [`${at}: expected a boolean`];
    case 'array':
      if (!Array.isArray(value)) return [`${at}: expected an array`];
      return value.flatMap((item, index) =>
        resolved.items === undefined ? [] : check(resolved.items, item, components, `${at}[${index}]`),
      );
    case 'object':
    case undefined: {
      if (resolved.type === undefined && resolved.properties === undefined) return [];
      if (typeof value !== 'object' || Array.isArray(value)) return [`${at}: expected an object`];
      const record = value as Record<string, unknown>;
      const problems = (resolved.required ?? [])
        .filter((key) => !(key in record))
        .map((key) => `${at}.${key}: missing`);
      for (const [key, item] of Object.entries(record)) {
        const property = resolved.properties?.[key];
        if (property !== undefined) problems.push(...check(property, item, components, `${at}.${key}`));
        else if (resolved.additionalProperties === undefined || resolved.additionalProperties === false)
          problems.push(`${at}.${key}: not documented`);
        else if (typeof resolved.additionalProperties === 'object')
          problems.push(...check(resolved.additionalProperties, item, components, `${at}.${key}`));
      }
      return problems;
    }
    default:
      return [];
  }
}
