/** Every cache key of the service is built here, so invalidations and reads cannot drift apart. */
export const cacheKeys = {
  /** Detail projection of one record, e.g. `resource('user', 42)`. */
  resource: (type: string, id: number | string): string => `res:${type}:${id}`,
} as const;
