import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { SETTINGS, type Settings } from '../config/settings.js';
import { ActorRateLimiter } from './actor-rate-limiter.js';
import { AuthFailureLimiter } from './auth-failure-limiter.js';
import { WindowCounters } from './window-counters.js';
import { Authentication } from './authentication.js';
import { AuthGuard } from './auth.guard.js';
import { DeviceLocators } from './device-locators.js';
import { TokenVerifier } from './token-verifier.js';
import { createVerificationKeys, VERIFICATION_KEYS } from './verification-keys.js';

/**
 * Authentication (the token and its verification keys, the limits on actors and on failures) and
 * the global deny-by-default guard. Sessions, users and every right are the access model's: the
 * guard asks it through `AccessEvaluator`, which `AccessModelModule` provides.
 */
@Global()
@Module({
  providers: [
    {
      provide: VERIFICATION_KEYS,
      inject: [SETTINGS],
      useFactory: (settings: Settings) => createVerificationKeys(settings),
    },
    WindowCounters,
    Authentication,
    AuthFailureLimiter,
    ActorRateLimiter,
    TokenVerifier,
    DeviceLocators,
    { provide: APP_GUARD, useClass: AuthGuard },
  ],
  exports: [Authentication, DeviceLocators, TokenVerifier],
})
export class AuthModule {}
