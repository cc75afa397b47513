import { Global, Module } from '@nestjs/common';
import { IdempotencyInterceptor } from './idempotency.interceptor.js';
import { IdempotencyStore } from './idempotency.store.js';
import { IdempotencyPurge } from './idempotency.purge.js';

/** Idempotency keys (part 8): the interceptor, its store and the purge of expired keys. */
@Global()
@Module({
  providers: [IdempotencyStore, IdempotencyInterceptor, IdempotencyPurge],
  exports: [IdempotencyStore, IdempotencyInterceptor],
})
export class IdempotencyModule {}
