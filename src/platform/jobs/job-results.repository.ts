import { Injectable } from '@nestjs/common';
import { listSpec } from '../http/list/list-spec.js';
import type { ListResponse } from '../http/responses.js';
import { ListPages } from '../projections/list-pages.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import { table } from '../database/table.js';

const JOB_RESULTS = table('job_results');

/**
 * Counted exactly: a client pages a job's results up to `meta.total`, so an estimate past 10 000
 * would stop it halfway. One job has at most 100 000 results, counted on job_results_job_idx.
 */
export const JOB_RESULT_LIST = listSpec({ from: 'job_results', select: 'result', sort: ['id'], exactCount: true });

/** A bulk job's per-item results, in item order (`GET /jobs/{job_id}/results`). */
@Injectable()
export class JobResultsRepository {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly pages: ListPages,
  ) {}

  /** Stores a chunk's results in the chunk's own transaction: `results[i]` is item `offset + i`. */
  async append(tx: Tx, jobId: string, offset: number, results: readonly object[]): Promise<void> {
    if (results.length === 0) return;
    await tx.write(
      JOB_RESULTS,
      `INSERT INTO job_results (job_id, item_index, result)
       SELECT $1, $2 + e.ord - 1, e.value FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS e(value, ord)`,
      [jobId, offset, JSON.stringify(results)],
    );
  }

  /** How many items of the job already have a result, and how many of those failed. */
  async tally(jobId: string): Promise<{ stored: number; failed: number }> {
    const [row] = await this.uow.reader.query<{ stored: number; failed: number }[]>(
      `SELECT count(*)::int AS stored, (count(*) FILTER (WHERE result->>'status' = 'failed'))::int AS failed
       FROM job_results WHERE job_id = $1`,
      [jobId],
    );
    return { stored: row?.stored ?? 0, failed: row?.failed ?? 0 };
  }

  page(jobId: string, query: Record<string, unknown>): Promise<ListResponse<object>> {
    return this.pages.read<{ result: object }, object>(
      JOB_RESULT_LIST,
      query,
      { where: 'job_id = $1', params: [jobId] },
      (rows) => rows.map((row) => row.result),
    );
  }

  /** Results of jobs finished long enough ago that the jobs themselves are gone (7 days, plus a day). */
  purge(tx: Tx): Promise<unknown> {
    return tx.write(JOB_RESULTS, "DELETE FROM job_results WHERE created_at < now() - interval '8 days'");
  }
}
