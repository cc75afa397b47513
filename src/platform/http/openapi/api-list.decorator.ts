import { applyDecorators } from '@nestjs/common';
import { ApiQuery, type ApiQueryOptions, type SchemaObject } from '@nestjs/swagger';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MAX_Q_LENGTH, type FilterType, type ListSpec } from '../list/list-spec.js';

type QuerySchema = SchemaObject;

function filterSchema(type: FilterType): QuerySchema {
  if (typeof type === 'object') return { type: 'string', enum: [...type.enum] };
  if (type === 'int') return { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER };
  if (type === 'bool') return { type: 'boolean' };
  if (type === 'timestamp') return { type: 'string', format: 'date-time' };
  return { type: 'string', minLength: 1, maxLength: 256 };
}

/** One sentence a reader can scan: what the list filters, searches and sorts by. */
export function listSummary(spec: ListSpec): string {
  const code = (names: readonly string[]): string => names.map((name) => `\`${name}\``).join(', ');
  const filters = Object.keys(spec.filters);
  return [
    filters.length > 0 ? `Filters ${code(filters)}` : undefined,
    spec.search.length > 0
      ? `\`q\` over ${spec.search.map((column) => column.replace(/^\w+\./, '')).join(', ')}`
      : undefined,
    `sort ${code(Object.keys(spec.sort))} (default \`${spec.defaultSort}\`)`,
  ]
    .filter(Boolean)
    .join('; ')
    .concat('.');
}

/**
 * Documents every query parameter a list route accepts, generated from the same `ListSpec` that
 * parses them, so a generated client can page, sort and filter, and the two cannot drift apart.
 */
export function ApiList(spec: ListSpec): MethodDecorator {
  const sortFields = Object.keys(spec.sort);
  const parameters: ApiQueryOptions[] = [
    {
      name: 'page',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 },
    },
    {
      name: 'page_size',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
    },
    {
      name: 'sort',
      required: false,
      description: `Comma-separated \`field:asc\` or \`field:desc\`; fields: ${sortFields.join(', ')}.`,
      // Swagger UI's "Try it out" sends the example: it must be the default, not another order.
      schema: { type: 'string', default: spec.defaultSort, example: spec.defaultSort },
    },
    ...(spec.search.length > 0
      ? [
          {
            name: 'q',
            required: false,
            description: 'Case-insensitive substring search.',
            schema: { type: 'string', minLength: 1, maxLength: MAX_Q_LENGTH },
          } satisfies ApiQueryOptions,
        ]
      : []),
    ...(spec.deletedColumn !== undefined
      ? [
          {
            name: 'include_deleted',
            required: false,
            schema: { type: 'boolean', default: false },
          } satisfies ApiQueryOptions,
        ]
      : []),
    {
      name: 'count',
      required: false,
      description: '`exact` always counts; `auto` estimates past 10 000 matches (`meta.total_exact: false`).',
      schema: { type: 'string', enum: ['exact', 'auto'], default: 'auto' },
    },
    ...Object.entries(spec.filters).map(([name, filter]): ApiQueryOptions => ({
      name,
      required: false,
      description:
        filter.operator === '>'
          ? 'Exclusive lower bound.'
          : filter.operator === '<'
            ? 'Exclusive upper bound.'
            : undefined,
      schema: filterSchema(filter.type),
    })),
  ];
  return applyDecorators(...parameters.map((parameter) => ApiQuery(parameter)));
}
