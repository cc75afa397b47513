import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/unit-of-work.js';
import { table } from '../database/table.js';

const BULK_JOB_ITEMS = table('bulk_job_items');

/** The items of bulk jobs, chunk by chunk (a chunk is what one transaction of the job works on). */
@Injectable()
export class BulkJobItemsRepository {
  /** Stores the items in chunks of `size`, in the transaction that enqueues the job. */
  async store(tx: Tx, jobId: string, items: readonly object[], size: number): Promise<void> {
    const offsets: number[] = [];
    const chunks: string[] = [];
    for (let offset = 0; offset < items.length; offset += size) {
      offsets.push(offset);
      chunks.push(JSON.stringify(items.slice(offset, offset + size)));
    }
    await tx.write(
      BULK_JOB_ITEMS,
      `INSERT INTO bulk_job_items (job_id, chunk_offset, items)
       SELECT $1, c.chunk_offset, c.items FROM unnest($2::int[], $3::jsonb[]) AS c(chunk_offset, items)`,
      [jobId, offsets, chunks],
    );
  }

  /**
   * Takes the chunk starting at `offset` in the transaction that works on it (deleted with the
   * work: a retried job finds exactly the chunks not done). Undefined when it is not there.
   */
  async take(tx: Tx, jobId: string, offset: number): Promise<object[] | undefined> {
    const [deleted] = await tx.write<[{ items: object[] }[], number]>(
      BULK_JOB_ITEMS,
      'DELETE FROM bulk_job_items WHERE job_id = $1 AND chunk_offset = $2 RETURNING items',
      [jobId, offset],
    );
    return deleted[0]?.items;
  }

  /**
   * Chunks never taken (their job failed for good), once their job is gone: the queue keeps a job
   * waiting at most 14 days and a finished one 7, so 15 days is past both.
   */
  purge(tx: Tx): Promise<unknown> {
    return tx.write(BULK_JOB_ITEMS, "DELETE FROM bulk_job_items WHERE created_at < now() - interval '15 days'");
  }
}
