import { AccessFindingsService } from '../../src/access-reviews/access-findings.service.js';
import type { AccessFindingsRepository, FindingsFilter } from '../../src/access-reviews/access-findings.repository.js';

/** A findings repository that answers a fixed total and records whether each page asked for a count. */
function repositoryAnswering(total: number): { repository: AccessFindingsRepository; counted: boolean[] } {
  const counted: boolean[] = [];
  const repository = {
    page: (_filter: FindingsFilter, _direction: string, _offset: number, _limit: number, countOver = true) => {
      counted.push(countOver);
      return Promise.resolve({ rows: [], total: countOver ? total : -1 });
    },
  } as unknown as AccessFindingsRepository;
  return { repository, counted };
}

describe('findings totals (part 2: exact up to 10 000, an estimate beyond)', () => {
  it('counts a filter past the cap once, then answers an inexact total without counting again', async () => {
    const { repository, counted } = repositoryAnswering(10_001);
    const findings = new AccessFindingsService(repository, { unusedAccessDays: 90 });
    const first = await findings.list({});
    const second = await findings.list({ page: '2' });
    expect(counted).toEqual([true, false]);
    for (const answer of [first, second]) expect([answer.total, answer.total_exact]).toEqual([10_001, false]);
  });

  it('counts every time while the total is exact, and remembers each filter on its own', async () => {
    const { repository, counted } = repositoryAnswering(42);
    const findings = new AccessFindingsService(repository, { unusedAccessDays: 90 });
    const answers = [await findings.list({}), await findings.list({}), await findings.list({ user_id: '3' })];
    expect(counted).toEqual([true, true, true]);
    expect(answers.map((answer) => [answer.total, answer.total_exact])).toEqual([
      [42, true],
      [42, true],
      [42, true],
    ]);
  });
});
