import { Module, type DynamicModule, type ModuleMetadata } from '@nestjs/common';
import { AuditModule } from './audit/audit.module.js';
import { AuthModule } from './auth/auth.module.js';
import { AuthoritiesModule } from './authorities/authorities.module.js';
import { CacheModule } from './cache/cache.module.js';
import { CacheRebuildModule } from './cache/cache-rebuild.module.js';
import { ConfigModule } from './config/config.module.js';
import type { Settings } from './config/settings.js';
import { DatabaseModule } from './database/database.module.js';
import { MobileDevicesModule } from './mobile-devices/mobile-devices.module.js';
import { GrantsModule } from './grants/grants.module.js';
import { InboxModule } from './inbox/inbox.module.js';
import { JobsModule } from './jobs/jobs.module.js';
import { ReadStateModule } from './read-state/read-state.module.js';
import { HealthModule } from './health/health.module.js';
import { IdempotencyModule } from './idempotency/idempotency.module.js';
import { UsersModule } from './users/users.module.js';
import { EventsModule } from './events/events.module.js';

export interface AppModuleOptions {
  readonly settings: Settings;
  readonly databaseUrl: string;
  /** Extra modules, e.g. the test-only routes the e2e suite mounts. */
  readonly imports?: ModuleMetadata['imports'];
}

@Module({})
export class AppModule {
  static forRoot(options: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(options.settings),
        DatabaseModule.forRoot(options.settings, options.databaseUrl),
        CacheModule,
        AuditModule,
        AuthModule,
        HealthModule,
        UsersModule,
        AuthoritiesModule,
        GrantsModule,
        JobsModule,
        IdempotencyModule,
        InboxModule,
        ReadStateModule,
        MobileDevicesModule,
        CacheRebuildModule,
        EventsModule,
        ...(options.imports ?? []),
      ],
    };
  }
}
