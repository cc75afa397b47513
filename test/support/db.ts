import pg from 'pg';
import { testDatabaseUrl } from './test-env.js';

/** Direct SQL against the test database, for asserting rows the API wrote. */
export async function sql<T = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}
