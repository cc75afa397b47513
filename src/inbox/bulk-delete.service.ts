import { Injectable, type OnModuleInit } from '@nestjs/common';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { writeOrRollBack } from '../platform/database/write-or-preview.js';
import { BulkJobs } from '../platform/jobs/bulk-jobs.service.js';
import type { BulkDeleteDto, BulkDeleteResponseDto, BulkDeleteResultDto } from './inbox.dto.js';
import { MessagesRepository } from './messages.repository.js';
import { MessagesService } from './messages.service.js';

/**
 * `POST /inbox/bulk-delete`: one statement finds (and locks) every message, one deletes the
 * live ones, one appends their audit events; `dry_run` runs the same statements in a transaction
 * that rolls back. Unknown ids fail alone.
 */
@Injectable()
export class BulkDeleteService implements OnModuleInit {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly messages: MessagesService,
    private readonly rows: MessagesRepository,
    private readonly jobs: BulkJobs,
  ) {}

  onModuleInit(): void {
    this.jobs.register('inbox.delete', 'route', (tx, _actor, items, options) =>
      this.runIn(tx, { ...options, items: items as BulkDeleteDto['items'] }),
    );
  }

  /** `dry_run` runs the very same statements in a transaction that rolls back (a preview). */
  run(dto: BulkDeleteDto): Promise<BulkDeleteResponseDto> {
    return writeOrRollBack(dto.dry_run === true, () => this.uow.run((tx) => this.runIn(tx, dto)));
  }

  /** One bulk (at most 1000 items) inside the caller's transaction: a request's, or a job chunk's. */
  async runIn(tx: Tx, dto: Omit<BulkDeleteDto, 'dry_run'>): Promise<BulkDeleteResponseDto> {
    const ids = dto.items.map((item) => item.id);
    const deleted = await this.rows.lockDeletedState(tx, ids);
    const handled = new Set<number>();
    const results: BulkDeleteResultDto[] = [];
    for (const [index, { id }] of dto.items.entries()) {
      const isDeleted = deleted.get(id);
      if (isDeleted === undefined) {
        results.push({
          index,
          id,
          status: 'failed',
          error: { code: 'MESSAGE_NOT_FOUND', message: `Message ${id} does not exist` },
        });
      } else if (isDeleted || handled.has(id)) {
        results.push({ index, id, status: 'already_deleted', error: null });
      } else {
        handled.add(id);
        results.push({ index, id, status: 'deleted', error: null });
      }
    }
    await this.messages.softDeleteMany(tx, [...handled], dto.reason ?? null);
    const failed = results.filter((result) => result.status === 'failed').length;
    return { accepted: results.length, processed: results.length - failed, failed, results };
  }
}
