import { Module, type DynamicModule, type ModuleMetadata } from '@nestjs/common';
import { AccessModule } from './access/access.module.js';
import { AccessRequestsModule } from './access-requests/access-requests.module.js';
import { AccessReviewsModule } from './access-reviews/access-reviews.module.js';
import { AuditEventsModule } from './audit-events/audit-events.module.js';
import { AuthoritiesModule } from './authorities/authorities.module.js';
import { CacheAdminModule } from './cache-admin/cache-admin.module.js';
import { EventsModule } from './events/events.module.js';
import { GrantsModule } from './grants/grants.module.js';
import { GroupsModule } from './groups/groups.module.js';
import { ScimModule } from './scim/scim.module.js';
import { HealthModule } from './health/health.module.js';
import { InboxModule } from './inbox/inbox.module.js';
import { JobsModule } from './jobs/jobs.module.js';
import { MobileDevicesModule } from './mobile-devices/mobile-devices.module.js';
import { AuditModule } from './platform/audit/audit.module.js';
import { AccessModelModule } from './access-model/access-model.module.js';
import { AuthModule } from './platform/auth/auth.module.js';
import { CacheModule } from './platform/cache/cache.module.js';
import { ConfigModule } from './platform/config/config.module.js';
import type { Settings } from './platform/config/settings.js';
import { DatabaseModule } from './platform/database/database.module.js';
import { ProjectionsModule } from './platform/projections/projections.module.js';
import { IdempotencyModule } from './platform/idempotency/idempotency.module.js';
import { JobQueueModule } from './platform/jobs/job-queue.module.js';
import { ReadStateModule } from './read-state/read-state.module.js';
import { UsersModule } from './users/users.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

export interface AppModuleOptions {
  readonly settings: Settings;
  readonly databaseUrl: string;
  /** Extra modules, e.g. the test-only routes the e2e suite mounts. */
  readonly imports?: ModuleMetadata['imports'];
}

/** The platform floor first (global modules every feature uses), then one module per feature folder. */
@Module({})
export class AppModule {
  static forRoot(options: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(options.settings),
        DatabaseModule.forRoot(options.settings, options.databaseUrl),
        CacheModule,
        ProjectionsModule,
        AuditModule,
        AuthModule,
        AccessModelModule,
        JobQueueModule,
        IdempotencyModule,
        HealthModule,
        UsersModule,
        AuthoritiesModule,
        GrantsModule,
        GroupsModule,
        AccessModule,
        AccessRequestsModule,
        AccessReviewsModule,
        InboxModule,
        ReadStateModule,
        MobileDevicesModule,
        JobsModule,
        AuditEventsModule,
        EventsModule,
        WebhooksModule,
        CacheAdminModule,
        ScimModule,
        ...(options.imports ?? []),
      ],
    };
  }
}
