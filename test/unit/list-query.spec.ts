import { ApiError } from '../../src/platform/http/api-error.js';
import { isIsoTimestamp, parseListQuery } from '../../src/platform/http/list/list-query.parser.js';
import { buildOrderBy, buildPageSql, buildWhere } from '../../src/platform/http/list/list-sql.js';
import type { ListSpec } from '../../src/platform/http/list/list-spec.js';

const SPEC: ListSpec = {
  tables: ['widgets'],
  from: 'things t',
  select: 't.*',
  idColumn: 't.id',
  sort: { id: 't.id', name: 't.name', created_at: 't.created_at' },
  defaultSort: 'id:asc',
  filters: {
    owner_id: { column: 't.owner_id', type: 'int' },
    is_active: { column: 't.is_active', type: 'bool' },
    kind: { column: 't.kind', type: { enum: ['a', 'b'] } },
  },
  search: ['t.name', 't.label'],
  deletedColumn: 't.is_deleted',
};

function problems(query: Record<string, unknown>): unknown {
  try {
    parseListQuery(SPEC, query);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return (error as ApiError).details.fields;
  }
  throw new Error('expected a validation error');
}

describe('list query parsing', () => {
  it('applies the defaults', () => {
    expect(parseListQuery(SPEC, {})).toEqual({
      page: 1,
      page_size: 25,
      sort: [{ field: 'id', direction: 'asc' }],
      q: undefined,
      include_deleted: false,
      count: 'auto',
      filters: {},
    });
  });

  it('parses every parameter strictly', () => {
    const query = parseListQuery(SPEC, {
      page: '3',
      page_size: '100',
      sort: 'name:desc,created_at',
      q: 'ab',
      include_deleted: 'true',
      count: 'exact',
      owner_id: '7',
      is_active: 'false',
      kind: 'b',
    });
    expect(query).toEqual({
      page: 3,
      page_size: 100,
      sort: [
        { field: 'name', direction: 'desc' },
        { field: 'created_at', direction: 'asc' },
      ],
      q: 'ab',
      include_deleted: true,
      count: 'exact',
      filters: { owner_id: 7, is_active: false, kind: 'b' },
    });
  });

  it.each([
    [{ page_size: '0' }, [{ field: 'page_size', rule: 'min', message: 'page_size must not be less than 1' }]],
    [{ page_size: '101' }, [{ field: 'page_size', rule: 'max', message: 'page_size must not be greater than 100' }]],
    [{ page_size: 'abc' }, [{ field: 'page_size', rule: 'int', message: 'page_size must be an integer' }]],
    [{ page: '0' }, [{ field: 'page', rule: 'min', message: 'page must not be less than 1' }]],
    [{ page: '1.5' }, [{ field: 'page', rule: 'int', message: 'page must be an integer' }]],
    [
      { sort: 'secret:asc' },
      [{ field: 'sort', rule: 'field', message: 'sort field "secret" is not one of id, name, created_at' }],
    ],
    [
      { sort: 'name:sideways' },
      [{ field: 'sort', rule: 'format', message: 'sort term "name:sideways" must be field:asc or field:desc' }],
    ],
    [{ token: 'x' }, [{ field: 'token', rule: 'unknown', message: 'token is not a parameter of this list' }]],
    [{ is_active: 'yes' }, [{ field: 'is_active', rule: 'boolean', message: 'is_active must be true or false' }]],
    [{ owner_id: '-1' }, [{ field: 'owner_id', rule: 'int', message: 'owner_id must be an integer' }]],
    [{ kind: 'c' }, [{ field: 'kind', rule: 'in', message: 'kind must be one of a, b' }]],
    [{ q: 'x'.repeat(201) }, [{ field: 'q', rule: 'length', message: 'q must be 1-200 characters' }]],
    [{ q: '' }, [{ field: 'q', rule: 'length', message: 'q must be 1-200 characters' }]],
    [{ count: 'fast' }, [{ field: 'count', rule: 'in', message: 'count must be exact or auto' }]],
    [{ page: ['1', '2'] }, [{ field: 'page', rule: 'single', message: 'page must be given once' }]],
  ])('rejects %j', (query, expected) => {
    expect(problems(query)).toEqual(expected);
  });

  it('reports every problem at once', () => {
    expect(problems({ page_size: '500', sort: 'nope', extra: '1' })).toHaveLength(3);
  });

  it('refuses include_deleted and q on resources without them', () => {
    const plain: ListSpec = { ...SPEC, deletedColumn: undefined, search: [] };
    expect(() => parseListQuery(plain, { include_deleted: 'true' })).toThrow(ApiError);
    expect(() => parseListQuery(plain, { q: 'a' })).toThrow(ApiError);
  });
});

describe('list SQL', () => {
  it('breaks ties by id and parameterises every value', () => {
    const query = parseListQuery(SPEC, {
      sort: 'name:desc',
      q: '50%_off\\',
      owner_id: '4',
      page: '2',
      page_size: '10',
    });
    const where = buildWhere(SPEC, query, { where: 't.device_id = ANY($1)', params: [[1, 2]] });
    expect(where.text).toBe(
      'WHERE t.is_deleted = false AND t.owner_id = $1 AND (t.name ILIKE $2 OR t.label ILIKE $2) AND (t.device_id = ANY($3))',
    );
    expect(where.params).toEqual([4, '%50\\%\\_off\\\\%', [1, 2]]);
    expect(buildOrderBy(SPEC, query)).toBe('ORDER BY t.name DESC, t.id ASC');
    const page = buildPageSql(SPEC, query, where);
    expect(page.text.endsWith('LIMIT $4 OFFSET $5')).toBe(true);
    expect(page.params.slice(-2)).toEqual([10, 10]);
  });

  it('does not repeat the id when the sort already uses it', () => {
    expect(buildOrderBy(SPEC, parseListQuery(SPEC, { sort: 'id:desc' }))).toBe('ORDER BY t.id DESC');
  });
});

describe('timestamp filters (part 1: ISO-8601 with an offset)', () => {
  it.each([
    '2026-11-21T09:30:00.000Z',
    '2026-11-21T09:30:00Z',
    '2026-11-21T09:30Z',
    '2024-02-29T00:00:00+01:00',
    '2026-11-21T09:30:00.123456-0530',
    '0001-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999Z',
    '9999-12-31T23:59:59+01:00',
    '0001-01-01T00:00:00+14:00',
  ])('accepts %s', (value) => {
    expect(isIsoTimestamp(value)).toBe(true);
  });

  it.each([
    '2026-02-29T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-11-21T24:00:00Z',
    '2026-11-21T09:60:00Z',
    '2026-11-21T09:30:00',
    '2026-11-21',
    '1',
    '2026',
    'March 7',
    '12/31/2026',
    '+275760-09-13T00:00:00.000Z',
    '0000-01-01T00:00:00Z',
    '2026-11-21T09:30:00+15:00',
    ' 2026-11-21T09:30:00Z',
    // Within year 9999 as written, past it once the offset is applied: answered as +010000-….
    '9999-12-31T23:59:59.999-14:00',
    '9999-12-31T23:00:00-01:00',
  ])('refuses %s', (value) => {
    expect(isIsoTimestamp(value)).toBe(false);
  });
});
