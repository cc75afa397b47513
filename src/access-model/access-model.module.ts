import { Global, Module } from '@nestjs/common';
import { AccessEvaluator } from '../platform/auth/access-evaluator.js';
import { AccessEventDeferralsRepository } from './access-event-deferrals.repository.js';
import { AccessFactsRepository } from './access-facts.repository.js';
import { DeferredAccessEvents } from './deferred-access-events.js';
import { AccessModelEvaluator } from './access-model-evaluator.js';
import { AccessSnapshotRepository } from './access-snapshot.repository.js';
import { AccessUses } from './access-uses.js';
import { AccessUsesRepository } from './access-uses.repository.js';
import { AccessWatch } from './access-watch.js';
import { AuthContextService } from './auth-context.service.js';
import { AuthorizationService } from './authorization.service.js';
import { DeviceAuthoritiesService } from './device-authorities.service.js';
import { SessionsService } from './sessions.service.js';
import { GroupAccess } from './group-access.service.js';
import { GroupFactsRepository } from './group-facts.repository.js';

/**
 * The access model: who holds what now and at any moment (users' roles and standing, sessions,
 * permission grants, authorities and their permissions), the rules of part 5 over them, the
 * evaluator the platform's guard asks (`AccessEvaluator`), snapshots and access changes, and last
 * use. It alone speaks SQL over those tables for authorization; it sits above the platform and
 * below the features, which reach it through these exported services.
 */
@Global()
@Module({
  providers: [
    AccessEventDeferralsRepository,
    DeferredAccessEvents,
    AccessFactsRepository,
    AccessSnapshotRepository,
    AccessWatch,
    AccessUses,
    AccessUsesRepository,
    AuthContextService,
    AuthorizationService,
    DeviceAuthoritiesService,
    SessionsService,
    GroupAccess,
    GroupFactsRepository,
    AccessModelEvaluator,
    { provide: AccessEvaluator, useExisting: AccessModelEvaluator },
  ],
  exports: [
    AccessEvaluator,
    DeferredAccessEvents,
    AccessWatch,
    AccessUses,
    AccessUsesRepository,
    AccessSnapshotRepository,
    AuthContextService,
    AuthorizationService,
    DeviceAuthoritiesService,
    SessionsService,
    GroupAccess,
    GroupFactsRepository,
  ],
})
export class AccessModelModule {}
