import pg from 'pg';
import { testDatabaseUrl } from './test-env.js';

/** Direct SQL against the test database, for asserting rows the API wrote. */
export function sql<T = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
  return sqlOn<T>(testDatabaseUrl(), text, params);
}

/** Direct SQL against another database (a spec's own). */
export async function sqlOn<T = Record<string, unknown>>(
  url: string,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}
