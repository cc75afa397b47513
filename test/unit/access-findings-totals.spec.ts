import { AccessFindingsService } from '../../src/access-reviews/access-findings.service.js';
import type { AccessFindingsRepository, FindingsFilter } from '../../src/access-reviews/access-findings.repository.js';
import type { Projections } from '../../src/platform/projections/projections.js';

type CountMode = 'capped' | 'exact' | 'none';

/** A findings repository that answers a fixed total and records how each page asked to count. */
function repositoryAnswering(total: number): { repository: AccessFindingsRepository; counted: CountMode[] } {
  const counted: CountMode[] = [];
  const repository = {
    page: (
      _filter: FindingsFilter,
      _direction: string,
      _offset: number,
      _limit: number,
      count: CountMode = 'capped',
    ) => {
      counted.push(count);
      return Promise.resolve({
        rows: [],
        total: count === 'none' ? -1 : count === 'capped' ? Math.min(total, 10_001) : total,
      });
    },
  } as unknown as AccessFindingsRepository;
  return { repository, counted };
}

/** Table generations that stand still until `moved` is set (undefined: the cache cannot be asked). */
function generations(): { projections: Projections; state: { now: number[] | undefined } } {
  const state: { now: number[] | undefined } = { now: [1, 1, 1, 1, 1] };
  const projections = { generations: { current: () => Promise.resolve(state.now) } } as unknown as Projections;
  return { projections, state };
}

describe('findings totals (part 2: exact up to 10 000, an estimate beyond)', () => {
  it('counts a filter past the cap once, then answers an inexact total without counting again', async () => {
    const { repository, counted } = repositoryAnswering(10_001);
    const findings = new AccessFindingsService(repository, { unusedAccessDays: 90 }, generations().projections);
    const first = await findings.list({});
    const second = await findings.list({ page: '2' });
    expect(counted).toEqual(['capped', 'none']);
    for (const answer of [first, second]) expect([answer.total, answer.total_exact]).toEqual([10_001, false]);
  });

  it('counts every time while the total is exact, and remembers each filter on its own', async () => {
    const { repository, counted } = repositoryAnswering(42);
    const findings = new AccessFindingsService(repository, { unusedAccessDays: 90 }, generations().projections);
    const answers = [await findings.list({}), await findings.list({}), await findings.list({ user_id: '3' })];
    expect(counted).toEqual(['capped', 'capped', 'capped']);
    expect(answers.map((answer) => [answer.total, answer.total_exact])).toEqual([
      [42, true],
      [42, true],
      [42, true],
    ]);
  });

  it('counts again once a write moved a generation, and whenever the cache cannot say', async () => {
    const { repository, counted } = repositoryAnswering(10_001);
    const { projections, state } = generations();
    const findings = new AccessFindingsService(repository, { unusedAccessDays: 90 }, projections);
    await findings.list({});
    state.now = [1, 2, 1, 1, 1];
    await findings.list({});
    await findings.list({});
    state.now = undefined;
    await findings.list({});
    await findings.list({});
    expect(counted).toEqual(['capped', 'capped', 'none', 'capped', 'capped']);
  });

  it('count=exact counts every path and answers an exact total', async () => {
    const { repository, counted } = repositoryAnswering(12_345);
    const findings = new AccessFindingsService(repository, { unusedAccessDays: 90 }, generations().projections);
    await findings.list({});
    const exact = await findings.list({ count: 'exact' });
    expect(counted).toEqual(['capped', 'exact']);
    expect([exact.total, exact.total_exact]).toEqual([12_345, true]);
  });
});
