import type { Settings } from '../config/settings.js';
import { EmbeddedPostgres } from './embedded-postgres.js';

export interface ResolvedDatabase {
  readonly url: string;
  /** Set in embedded mode: the cluster to stop (if unused) when the process exits. */
  readonly embedded: EmbeddedPostgres | undefined;
}

/** DATABASE_URL if set; otherwise the embedded PostgreSQL under DATA_DIR, started if needed. */
export async function resolveDatabase(settings: Settings, log: (line: string) => void): Promise<ResolvedDatabase> {
  if (settings.databaseUrl !== undefined) return { url: settings.databaseUrl, embedded: undefined };
  const embedded = new EmbeddedPostgres(settings.dataDir, settings.embeddedPostgresPort, log);
  await embedded.ensureRunning();
  return { url: embedded.url, embedded };
}
