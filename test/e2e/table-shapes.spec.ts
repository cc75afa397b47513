import '../../src/app.module.js';
import { declaredTables } from '../../src/platform/database/table.js';
import { sql } from '../support/db.js';

/**
 * The repository tier, without HTTP: every table the service declares exists in the migrated
 * schema, and every resource table's detail read (its version expression, its columns, its join)
 * runs there. A column renamed by a migration and not by its repository fails here, not on the
 * first request that reads it.
 */
describe('table descriptors against the migrated schema', () => {
  const tables = declaredTables();

  it('the app declares its tables, the resource ones with a shape', () => {
    const names = new Set(tables.map((table) => table.name));
    for (const name of [
      'users',
      'devices',
      'authorities',
      'permission_grants',
      'inbox_messages',
      'audit_events',
      'events',
    ])
      expect(names).toContain(name);
    expect(tables.filter((table) => table.shape !== undefined).length).toBeGreaterThanOrEqual(10);
  });

  it('every declared table exists', async () => {
    const rows = await sql<{ name: string; found: string | null }>(
      'SELECT name, to_regclass(name)::text AS found FROM unnest($1::text[]) AS name',
      [tables.map((table) => table.name)],
    );
    expect(rows.filter((row) => row.found === null).map((row) => row.name)).toEqual([]);
  });

  it('every resource table’s detail read runs, and its version is an integer', async () => {
    for (const table of tables) {
      const shape = table.shape;
      if (shape === undefined) continue;
      const statement = `SELECT pg_typeof(version)::text AS type FROM (SELECT ${table.selected} FROM ${shape.from ?? table.name} WHERE ${shape.idColumn ?? 'id'} = $1) AS row UNION ALL SELECT pg_typeof(${shape.version ?? 'version'})::text FROM ${shape.from ?? table.name} LIMIT 1`;
      const rows = await sql<{ type: string }>(statement, [0]).catch((error: unknown) => {
        throw new Error(`${table.name}: ${error instanceof Error ? error.message : String(error)}`);
      });
      for (const row of rows)
        expect({ table: table.name, type: row.type }).toEqual({
          table: table.name,
          type: expect.stringMatching(/^(integer|bigint)$/),
        });
    }
  });
});
