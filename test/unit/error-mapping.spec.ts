import { QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError, QueryFailedError } from 'typeorm';
import { toApiError } from '../../src/platform/http/error-mapping.js';
import { loggableError } from '../../src/platform/http/exception.filter.js';

/** A driver error as `pg` raises it, wrapped by TypeORM as it reaches the service. */
const sqlState = (code: string): unknown =>
  new QueryFailedError('SELECT 1', [], Object.assign(new Error(`sqlstate ${code}`), { code }));

describe('which failures are the database refusing the service (503) rather than a bug (500)', () => {
  it.each([
    ['55000 not accepting connections', sqlState('55000')],
    ['3D000 database gone', sqlState('3D000')],
    ['28P01 password refused', sqlState('28P01')],
    ['53300 too many connections', sqlState('53300')],
    ['08006 connection failure', sqlState('08006')],
    ['57P01 admin shutdown', sqlState('57P01')],
    ['a transaction whose connection died (TypeORM)', new QueryRunnerAlreadyReleasedError()],
    ['a query on a released connection (TypeORM)', new QueryRunnerProviderAlreadyReleasedError()],
  ])('%s is 503 naming the database', (_, error) => {
    expect(toApiError(error)).toMatchObject({
      internal: false,
      error: { status: 503, code: 'SERVICE_UNAVAILABLE', details: { dependency: 'database', reason: 'unreachable' } },
    });
  });

  it('a deadlock outside a unit of work is 503 contention; a unique violation is a bug (500)', () => {
    expect(toApiError(sqlState('40P01')).error.details).toEqual({ dependency: 'database', reason: 'contention' });
    expect(toApiError(sqlState('23505'))).toMatchObject({ internal: true, error: { code: 'INTERNAL_ERROR' } });
  });
});

describe('what an unhandled database error logs', () => {
  it('leaves out the bound parameters and the failing row (a secret can be in either)', () => {
    const driver = Object.assign(new Error('new row violates check constraint'), {
      code: '23514',
      detail: 'Failing row contains (1, https://x, whsec_SECRETVALUE)',
      constraint: 'webhook_endpoints_url_check',
    });
    const error = Object.assign(
      new QueryFailedError('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [1, 'whsec_SECRETVALUE'], driver),
      { detail: driver.detail },
    );
    const logged = JSON.stringify(loggableError(error));
    expect(logged).not.toContain('SECRETVALUE');
    expect(logged).toContain('webhook_endpoints_url_check');
    expect(logged).toContain('new row violates check constraint');
  });
});
