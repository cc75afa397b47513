import { Platform1763683200000 } from './1763683200000-platform.js';

/** Migrations in the order they apply; the data source loads these classes, not a file glob. */
export const MIGRATIONS = [Platform1763683200000];
