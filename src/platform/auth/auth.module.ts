import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { SETTINGS, type Settings } from '../config/settings.js';
import { ActorRateLimiter } from './actor-rate-limiter.js';
import { AccessFactsRepository } from './access-facts.repository.js';
import { AccessSnapshotRepository } from './access-snapshot.repository.js';
import { AccessWatch } from './access-watch.js';
import { AccessUses } from './access-uses.js';
import { AccessUsesRepository } from './access-uses.repository.js';
import { AuthContextService } from './auth-context.service.js';
import { AuthFailureLimiter } from './auth-failure-limiter.js';
import { WindowCounters } from './window-counters.js';
import { Authentication } from './authentication.js';
import { AuthGuard } from './auth.guard.js';
import { AuthorizationService } from './authorization.service.js';
import { DeviceLocators } from './device-locators.js';
import { DeviceAuthoritiesService } from './device-authorities.service.js';
import { SessionsService } from './sessions.service.js';
import { TokenVerifier } from './token-verifier.js';
import { createVerificationKeys, VERIFICATION_KEYS } from './verification-keys.js';

/** Authentication (JWT + session), the authorization evaluator and the global deny-by-default guard. */
@Global()
@Module({
  providers: [
    AccessFactsRepository,
    AccessSnapshotRepository,
    AccessWatch,
    AccessUses,
    AccessUsesRepository,
    {
      provide: VERIFICATION_KEYS,
      inject: [SETTINGS],
      useFactory: (settings: Settings) => createVerificationKeys(settings),
    },
    AuthContextService,
    AuthorizationService,
    DeviceAuthoritiesService,
    WindowCounters,
    Authentication,
    AuthFailureLimiter,
    ActorRateLimiter,
    TokenVerifier,
    DeviceLocators,
    SessionsService,
    { provide: APP_GUARD, useClass: AuthGuard },
  ],
  exports: [
    AccessWatch,
    AccessUses,
    AccessUsesRepository,
    AccessSnapshotRepository,
    Authentication,
    DeviceLocators,
    AuthContextService,
    AuthorizationService,
    DeviceAuthoritiesService,
    SessionsService,
  ],
})
export class AuthModule {}
