import type { Settings } from '../config/settings.js';
import { createDataSource, runMigrations } from './data-source.js';

/** Opens a short-lived connection, applies pending migrations, closes it. */
export async function migrate(settings: Settings, url: string): Promise<string[]> {
  const dataSource = createDataSource(settings, url, 'admin-api-migrate');
  await dataSource.initialize();
  try {
    return await runMigrations(dataSource);
  } finally {
    await dataSource.destroy();
  }
}
