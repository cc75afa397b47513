/** Injection token for the resolved database URL (embedded or DATABASE_URL), for clients beside TypeORM such as the job queue. */
export const DATABASE_URL = Symbol('DATABASE_URL');

/** Injection token for the instance's `WriteTurns` (how many write transactions run at once). */
export const WRITE_TURNS = Symbol('WRITE_TURNS');
