import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { AuditService } from '../platform/audit/audit.service.js';
import { AuthContextService } from '../access-model/auth-context.service.js';
import { DeviceAuthoritiesService } from '../access-model/device-authorities.service.js';
import { AcceptedResponse } from '../platform/http/responses.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import type { AcceptedJobDto } from '../platform/jobs/jobs.dto.js';
import { JobQueue } from '../platform/jobs/job-queue.js';
import { ReadCountsRepository } from '../read-state/read-counts.repository.js';
import { listedTables } from '../platform/http/list/list-spec.js';
import { cacheKeys } from '../platform/cache/cache-keys.js';
import { CacheEntries } from '../platform/cache/cache-entries.js';
import { TableGenerations } from '../platform/cache/table-generations.js';
import type { CacheRebuildResultDto, RebuildScope } from './rebuild-cache.dto.js';

/**
 * `POST /cache/rebuild` (part 6.14): drops the chosen projections and warms them from the
 * database, in a job. Reads stay correct meanwhile: a dropped entry is a miss, and a warm entry
 * is written with the same compare-and-set as every rebuild, so it never replaces a newer one a
 * concurrent write made.
 */
@Injectable()
export class CacheRebuildService implements OnModuleInit {
  private readonly logger = new Logger('CacheRebuild');

  constructor(
    private readonly uow: UnitOfWork,
    private readonly jobs: JobQueue,
    private readonly audit: AuditService,
    private readonly entries: CacheEntries,
    private readonly generations: TableGenerations,
    private readonly authContexts: AuthContextService,
    private readonly deviceAuthorities: DeviceAuthoritiesService,
    private readonly readCounts: ReadCountsRepository,
  ) {}

  onModuleInit(): void {
    this.jobs.declare('cache-rebuild', { retryLimit: 2, retryDelay: 5, retryBackoff: true, retryDelayMax: 60 });
    this.jobs.register<{ scope: RebuildScope }>('cache-rebuild', (job) => this.rebuild(job.data.scope));
  }

  async request(scope: RebuildScope): Promise<AcceptedResponse<AcceptedJobDto>> {
    const jobId = await this.uow.run(async (tx) => {
      const job = await this.jobs.enqueue(tx, 'cache-rebuild', { scope });
      await this.audit.record(tx, 'cache.rebuild', null, { changes: { scope: [null, scope], job_id: [null, job] } });
      return job;
    });
    return new AcceptedResponse<AcceptedJobDto>({ job_id: jobId, state: 'queued' }, `/v1/admin/jobs/${jobId}`, 2);
  }

  async rebuild(scope: RebuildScope): Promise<CacheRebuildResultDto> {
    const started = Date.now();
    let written = 0;
    if (scope === 'all' || scope === 'auth') {
      await this.drop(cacheKeys.prefixes.auth);
      written += await this.authContexts.warm();
    }
    if (scope === 'all' || scope === 'devices') {
      await this.drop(cacheKeys.prefixes.devices);
      written += await this.deviceAuthorities.warmAll();
    }
    if (scope === 'all' || scope === 'details') {
      await this.drop(cacheKeys.prefixes.details);
      await this.drop(cacheKeys.prefixes.readCounts);
      written += await this.readCounts.warm();
    }
    if ((scope === 'all' || scope === 'lists') && !(await this.generations.bump(listedTables())))
      throw new Error('the list generations could not be bumped');
    this.logger.log({ msg: 'cache rebuilt', scope, entries_written: written, duration_ms: Date.now() - started });
    return { scope, entries_written: written };
  }

  /**
   * Makes this kind of entry a miss. Not a generation bump, even for `all`: the tombstones keep
   * each entry's version, so a read that loaded a row before a concurrent write cannot store it
   * after the write's rebuild.
   */
  private async drop(keyPrefix: string): Promise<void> {
    // A breaker opened by a busy moment closes within a second: wait for it rather than fail the job.
    for (let attempt = 1; (await this.entries.dropByPrefix(keyPrefix)) === undefined; attempt += 1) {
      if (attempt >= 5) throw new Error(`the cache could not be reached to drop ${keyPrefix}* entries`);
      await sleep(1000);
    }
  }
}
