import { Global, Module } from '@nestjs/common';
import { IdempotentRequests } from './idempotent-requests.js';
import { IdempotencyKeysRepository } from './idempotency-keys.repository.js';
import { IdempotencyPurge } from './idempotency.purge.js';

/** Idempotency keys (part 8): the interceptor, its store and the purge of expired keys. */
@Global()
@Module({
  providers: [IdempotencyKeysRepository, IdempotentRequests, IdempotencyPurge],
  exports: [IdempotencyKeysRepository, IdempotentRequests],
})
export class IdempotencyModule {}
