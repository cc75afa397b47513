import { ApiError } from '../../src/platform/http/api-error.js';
import { FILTER_LIMITS, parseFilter } from '../../src/scim/scim-filter.js';
import { filterSql, Parameters } from '../../src/scim/scim-filters.repository.js';
import { USER_FILTERS } from '../../src/scim/scim-users.repository.js';
import { GROUP_FILTERS } from '../../src/scim/scim-groups.repository.js';

function refusal(run: () => unknown): { rule: string; message: string } {
  try {
    run();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const [field] = error.details.fields as { rule: string; message: string }[];
    return { rule: field?.rule ?? '', message: field?.message ?? '' };
  }
  throw new Error('no refusal');
}

function users(text: string): { sql: string; values: unknown[] } {
  const params = new Parameters();
  return { sql: filterSql(parseFilter(text), USER_FILTERS, params), values: params.values };
}

describe('SCIM filters: parsed by RFC 7644 §3.4.2.2 and compiled to bound SQL', () => {
  it('precedence: not, then and, then or; parentheses; keywords and attribute names in any case', () => {
    expect(parseFilter('userName eq "a" or displayName co "b" and active eq true')).toEqual({
      kind: 'or',
      terms: [
        { kind: 'compare', path: { attr: 'username' }, op: 'eq', value: 'a' },
        {
          kind: 'and',
          terms: [
            { kind: 'compare', path: { attr: 'displayname' }, op: 'co', value: 'b' },
            { kind: 'compare', path: { attr: 'active' }, op: 'eq', value: true },
          ],
        },
      ],
    });
    expect(parseFilter('NOT (USERNAME EQ "a") AND (title pr)')).toEqual({
      kind: 'and',
      terms: [
        { kind: 'not', filter: { kind: 'compare', path: { attr: 'username' }, op: 'eq', value: 'a' } },
        { kind: 'present', path: { attr: 'title' } },
      ],
    });
  });

  it('value paths, with the sub-attribute after the bracket as Entra ID sends it; URNs; escapes in strings', () => {
    expect(parseFilter('emails[type eq "work"].value eq "a@b.c"')).toEqual({
      kind: 'valuePath',
      path: { attr: 'emails' },
      filter: { kind: 'compare', path: { attr: 'type' }, op: 'eq', value: 'work' },
      then: { kind: 'compare', path: { attr: 'value' }, op: 'eq', value: 'a@b.c' },
    });
    expect(parseFilter('urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J\\"o\\u00e3o"')).toEqual({
      kind: 'compare',
      path: { attr: 'username', urn: 'urn:ietf:params:scim:schemas:core:2.0:user' },
      op: 'sw',
      value: 'J"oão',
    });
    expect(parseFilter('meta.lastModified gt "2026-01-01T00:00:00Z"')).toMatchObject({
      path: { attr: 'meta', sub: 'lastmodified' },
    });
  });

  it('hostile input is a 400 invalidFilter before any work: length, control characters, depth, 10 000 or terms, bad tokens', () => {
    const cases = [
      'x'.repeat(FILTER_LIMITS.length + 1),
      'userName eq "a\nb"',
      `${'('.repeat(40)}userName eq "a"${')'.repeat(40)}`,
      `${'not ('.repeat(20)}userName eq "a"${')'.repeat(20)}`,
      Array.from({ length: 10_000 }, (_, i) => `id eq "${i}"`)
        .join(' or ')
        .slice(0, 4000),
      Array.from({ length: 300 }, (_, i) => `id eq "${i}"`).join(' or '),
      'userName eq',
      'userName equals "a"',
      'userName eq "a" extra',
      'userName eq "unterminated',
      '"a" eq userName',
      'emails[type eq "work"',
      'userName eq "a"; DROP TABLE users',
      '',
      '   ',
    ];
    for (const text of cases)
      expect([text.slice(0, 40), refusal(() => parseFilter(text)).rule]).toEqual([text.slice(0, 40), 'invalidFilter']);
    expect(refusal(() => parseFilter('userName eq "a" or')).message).toMatch(/ends/);
  });

  it('compiles to indexed expressions with every value bound, never spliced', () => {
    expect(users('userName eq "Ana@X.com"')).toEqual({
      sql: 'lower(coalesce(users.user_name, users.email)) = lower($1)',
      values: ['Ana@X.com'],
    });
    expect(users(`displayName co "50%_off'--"`)).toEqual({
      sql: 'users.display_name ILIKE $1',
      values: [`%50\\%\\_off'--%`],
    });
    expect(users('emails[type eq "work"].value eq "a@b.c"').values).toEqual(['work', 'a@b.c']);
    expect(users('active eq "False"')).toEqual({ sql: '(users.status_id = 2) = $1', values: [false] });
    expect(users('id eq "abc"').sql).toBe('false');
    expect(users('not (externalId pr)').sql).toBe(
      "NOT coalesce((users.external_id IS NOT NULL AND users.external_id <> ''), false)",
    );
    const groups = new Parameters();
    expect(filterSql(parseFilter('members[value eq "12"]'), GROUP_FILTERS, groups)).toMatch(
      /^EXISTS \(SELECT 1 FROM group_memberships m/,
    );
  });

  it('an attribute that cannot be filtered on, or a value of the wrong type, is invalidFilter naming what can', () => {
    expect(refusal(() => users('title eq "x"'))).toEqual({
      rule: 'invalidFilter',
      message: expect.stringMatching(/title cannot be filtered on \(filterable: id, externalid, username/),
    });
    expect(refusal(() => users('active gt true')).rule).toBe('invalidFilter');
    expect(refusal(() => users('meta.lastModified gt "yesterday"')).rule).toBe('invalidFilter');
    expect(refusal(() => users('userName eq 5')).rule).toBe('invalidFilter');
    expect(
      refusal(() => users('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "x"')).rule,
    ).toBe('invalidFilter');
    expect(refusal(() => users('emails[value eq "x"].type[type eq "y"]')).rule).toBe('invalidFilter');
  });
});
