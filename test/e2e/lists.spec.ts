import { randomUUID } from 'node:crypto';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';

describe('lists', () => {
  let t: TestApp;
  // Every row of this spec carries the tag in its name, so `q` isolates it from other specs' rows.
  const tag = `lst${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    t = await startApp({ redisUrl: null });
    for (const [name, category, weight] of [
      ['b', 'tool', 5],
      ['a', 'toy', 5],
      ['c', 'part', 1],
      ['d', 'tool', 9],
    ] as const) {
      await t
        .http()
        .post('/v1/test/widgets')
        .send({ name: `${tag}-${name}`, category, weight })
        .expect(201);
    }
  });
  afterAll(() => t.close());

  const list = (query: string) => t.http().get(`/v1/test/widgets?q=${tag}&${query}`);
  const names = (body: { data: { name: string }[] }) => body.data.map((row) => row.name.slice(tag.length + 1));

  it('pages with meta.page, page_size, total and total_exact', async () => {
    const response = await list('page_size=3').expect(200);
    expect(names(response.body)).toEqual(['b', 'a', 'c']);
    expect(response.body.meta).toEqual({
      request_id: expect.any(String),
      page: 1,
      page_size: 3,
      total: 4,
      total_exact: true,
    });
    expect(names((await list('page_size=3&page=2').expect(200)).body)).toEqual(['d']);
  });

  it('returns an empty page past the end with the real total', async () => {
    const response = await list('page=9&page_size=3').expect(200);
    expect(response.body.data).toEqual([]);
    expect(response.body.meta).toMatchObject({ page: 9, total: 4, total_exact: true });
  });

  it('sorts by several fields and breaks ties by id', async () => {
    expect(names((await list('sort=weight:desc').expect(200)).body)).toEqual(['d', 'b', 'a', 'c']);
    expect(names((await list('sort=weight:asc,name:desc').expect(200)).body)).toEqual(['c', 'b', 'a', 'd']);
  });

  it('filters with typed values', async () => {
    expect(names((await list('category=tool').expect(200)).body)).toEqual(['b', 'd']);
    expect(names((await list('weight=5&category=toy').expect(200)).body)).toEqual(['a']);
    expect((await list('active=false').expect(200)).body.meta.total).toBe(0);
  });

  it('matches q case-insensitively and treats wildcards literally', async () => {
    const upper = await t.http().get(`/v1/test/widgets?q=${tag.toUpperCase()}-A`).expect(200);
    expect(names(upper.body)).toEqual(['a']);
    expect((await t.http().get(`/v1/test/widgets?q=${tag}%25`).expect(200)).body.data).toEqual([]);
  });

  it('hides soft-deleted rows unless include_deleted=true', async () => {
    const created = await t
      .http()
      .post('/v1/test/widgets')
      .send({ name: `${tag}-z`, category: 'part' })
      .expect(201);
    await t.http().delete(`/v1/test/widgets/${created.body.data.id}`).expect(200);
    expect(names((await list('').expect(200)).body)).not.toContain('z');
    expect(names((await list('include_deleted=true').expect(200)).body)).toContain('z');
  });

  it.each([
    ['page_size=0', 'page_size', 'min'],
    ['page_size=101', 'page_size', 'max'],
    ['page_size=abc', 'page_size', 'int'],
    ['sort=secret:asc', 'sort', 'field'],
    ['colour=red', 'colour', 'unknown'],
    ['access_token=abc', 'access_token', 'unknown'],
    ['active=1', 'active', 'boolean'],
    ['category=weapon', 'category', 'in'],
  ])('rejects %s with VALIDATION_FAILED', async (query, field, rule) => {
    const response = await list(query).expect(400);
    expect(response.body.success).toBe(false);
    expect(response.body.error.code).toBe('VALIDATION_FAILED');
    expect(response.body.error.details.fields).toEqual([expect.objectContaining({ field, rule })]);
  });

  describe('meta.total past the exact-count threshold', () => {
    const bulk = `${tag}bulk`;
    beforeAll(async () => {
      await sql(
        `INSERT INTO test_widgets (name, category) SELECT $1 || '-' || g, 'part' FROM generate_series(1, 10001) g`,
        [bulk],
      );
      await sql('ANALYZE test_widgets');
    });

    it('is an estimate beyond 10 000 matches, flagged total_exact: false', async () => {
      const response = await t.http().get(`/v1/test/widgets?q=${bulk}&page_size=1`).expect(200);
      expect(response.body.meta.total_exact).toBe(false);
      expect(response.body.meta.total).toBeGreaterThan(10_000);
    });

    it('is exact at any size with count=exact', async () => {
      const response = await t.http().get(`/v1/test/widgets?q=${bulk}&page_size=1&count=exact`).expect(200);
      expect(response.body.meta).toMatchObject({ total: 10_001, total_exact: true });
    });

    it('is exact at 10 000 matches', async () => {
      await sql(`UPDATE test_widgets SET is_deleted = true WHERE name = $1`, [`${bulk}-1`]);
      const response = await t.http().get(`/v1/test/widgets?q=${bulk}&page_size=1`).expect(200);
      expect(response.body.meta).toMatchObject({ total: 10_000, total_exact: true });
    });
  });
});
