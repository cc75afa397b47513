import { Global, Module } from '@nestjs/common';
import { IdempotencyInterceptor } from './idempotency.interceptor.js';
import { IdempotencyKeysRepository } from './idempotency-keys.repository.js';
import { IdempotencyPurge } from './idempotency.purge.js';

/** Idempotency keys (part 8): the interceptor, its store and the purge of expired keys. */
@Global()
@Module({
  providers: [IdempotencyKeysRepository, IdempotencyInterceptor, IdempotencyPurge],
  exports: [IdempotencyKeysRepository, IdempotencyInterceptor],
})
export class IdempotencyModule {}
