import { availableParallelism } from 'node:os';
import { parseClusterUrl } from '../../src/platform/config/redis-url.js';
import { loadSettings, SettingsError } from '../../src/platform/config/settings.js';

describe('settings', () => {
  it('has the documented defaults with no environment', () => {
    const settings = loadSettings({});
    expect(settings).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: undefined,
      redisUrl: undefined,
      jwtIssuer: 'admin-api',
      jwtAudience: 'admin-portal',
      cacheTtlSeconds: 300,
      rateLimitPerMinute: 1200,
      pushProvider: 'log',
      logLevel: 'info',
      cacheTimeoutMs: 50,
      accessRequestPendingHours: 72,
      accessRequestMaxSeconds: 2_592_000,
    });
    expect(settings.dataDir.endsWith('.data')).toBe(true);
  });

  it.each([
    [{ PORT: 'abc' }, 'Invalid setting PORT: "abc" is not an integer'],
    [{ PORT: '70000' }, 'Invalid setting PORT: 70000 is outside 0..65535'],
    [{ ACCESS_REQUEST_PENDING_HOURS: '0' }, 'Invalid setting ACCESS_REQUEST_PENDING_HOURS: 0 is outside 1..8760'],
    [{ ACCESS_REQUEST_MAX_SECONDS: '299' }, 'Invalid setting ACCESS_REQUEST_MAX_SECONDS: 299 is outside 300..31536000'],
    [{ ACCESS_REQUEST_MAX_SECONDS: '1h' }, 'Invalid setting ACCESS_REQUEST_MAX_SECONDS: "1h" is not an integer'],
    [{ DATABASE_URL: 'mysql://x' }, 'Invalid setting DATABASE_URL: must use one of postgres:, postgresql:'],
    [{ REDIS_URL: 'not a url' }, 'Invalid setting REDIS_URL: is not a valid URL'],
    [
      { REDIS_URL: 'redis+cluster://10.0.0.1:7000,10.0.0.2' },
      'Invalid setting REDIS_URL: must list cluster nodes as redis+cluster://[user:password@]host:port,host:port',
    ],
    [
      { REDIS_URL: 'redis+cluster://user:pa%ZZ@10.0.0.1:7000' },
      'Invalid setting REDIS_URL: must list cluster nodes as redis+cluster://[user:password@]host:port,host:port',
    ],
    [
      { REDIS_URL: 'redis+cluster://10.0.0.1:70000' },
      'Invalid setting REDIS_URL: must list cluster nodes as redis+cluster://[user:password@]host:port,host:port',
    ],
    [
      { DATABASE_READ_URLS: 'postgres://replica-1/app,,postgres://replica-2/app' },
      'Invalid setting DATABASE_READ_URLS: has an empty entry',
    ],
    [
      { DATABASE_READ_URLS: 'postgres://replica-1/app,mysql://replica-2/app' },
      'Invalid setting DATABASE_READ_URLS: must use one of postgres:, postgresql:',
    ],
    [{ JWT_SECRET: 'short' }, 'Invalid setting JWT_SECRET: must be at least 32 characters'],
    [
      { JWT_SECRET: 'x'.repeat(32), JWT_JWKS_URL: 'https://idp.example/jwks' },
      'Invalid setting JWT_JWKS_URL: cannot be combined with JWT_SECRET; choose one verification mode',
    ],
    [{ CACHE_TTL_SECONDS: '0' }, 'Invalid setting CACHE_TTL_SECONDS: 0 is outside 1..86400'],
    [{ PUSH_PROVIDER: 'apns' }, 'Invalid setting PUSH_PROVIDER: "apns" is not one of log, fcm'],
    [{ PUSH_PROVIDER: 'fcm' }, 'Invalid setting FCM_CREDENTIALS: is required when PUSH_PROVIDER is fcm'],
    [
      { LOG_LEVEL: 'loud' },
      'Invalid setting LOG_LEVEL: "loud" is not one of fatal, error, warn, info, debug, trace, silent',
    ],
  ])('rejects %j with one line naming the setting', (env, message) => {
    let thrown: unknown;
    try {
      loadSettings(env);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(SettingsError);
    expect((thrown as Error).message).toBe(message);
    expect((thrown as Error).message).not.toContain('\n');
  });

  it('takes CORS_ORIGINS as exact origins and refuses anything that is not one', () => {
    expect(loadSettings({}).corsOrigins).toEqual([]);
    expect(loadSettings({ CORS_ORIGINS: 'https://portal.example.com, http://localhost:5173' }).corsOrigins).toEqual([
      'https://portal.example.com',
      'http://localhost:5173',
    ]);
    for (const bad of [
      '*',
      'https://portal.example.com/',
      'https://portal.example.com/app',
      'portal.example.com',
      'ftp://x.example',
    ])
      expect(() => loadSettings({ CORS_ORIGINS: bad })).toThrow(SettingsError);
  });

  it("runs two write turns per core, leaving two of the pool's connections to reads; DB_WRITE_CONCURRENCY wins", () => {
    expect(loadSettings({ DB_POOL_SIZE: '500' }).dbWriteConcurrency).toBe(2 * availableParallelism());
    expect(loadSettings({ DB_POOL_SIZE: '3' }).dbWriteConcurrency).toBe(1);
    expect(loadSettings({ DB_POOL_SIZE: '1' }).dbWriteConcurrency).toBe(1);
    expect(loadSettings({ DB_POOL_SIZE: '3', DB_WRITE_CONCURRENCY: '7' }).dbWriteConcurrency).toBe(7);
    expect(loadSettings({}).dbWriteWaitMs).toBe(10_000);
    expect(() => loadSettings({ DB_WRITE_CONCURRENCY: '0' })).toThrow(SettingsError);
  });

  it('accepts valid overrides', () => {
    const settings = loadSettings({
      PORT: '8080',
      REDIS_URL: 'redis://127.0.0.1:6379/2',
      LOG_LEVEL: 'DEBUG',
      JWT_SECRET: 's'.repeat(40),
    });
    expect(settings).toMatchObject({
      port: 8080,
      redisUrl: 'redis://127.0.0.1:6379/2',
      logLevel: 'debug',
      jwtSecret: 's'.repeat(40),
    });
  });

  it('takes a Redis Cluster by some of its nodes, and read replicas as a list', () => {
    const settings = loadSettings({
      REDIS_URL: 'rediss+cluster://app:s%40cret@10.0.0.1:7000,[::1]:7001,redis-3.internal:7002',
      DATABASE_READ_URLS: ' postgres://replica-1:5432/app , postgresql://replica-2/app',
    });
    expect(settings.databaseReadUrls).toEqual(['postgres://replica-1:5432/app', 'postgresql://replica-2/app']);
    expect(parseClusterUrl(settings.redisUrl ?? '')).toEqual({
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
        { host: 'redis-3.internal', port: 7002 },
      ],
      username: 'app',
      password: 's@cret',
      tls: true,
    });
    expect(loadSettings({}).databaseReadUrls).toEqual([]);
  });
});
