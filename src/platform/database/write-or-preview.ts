import { previewOf } from './previews.js';
import { NoContent, RawJson, ResourceResponse } from '../http/responses.js';

/** A preview's answer: `outcome` is the `data` the write would answer (null for a 204). */
export interface PreviewAnswer {
  readonly dry_run: true;
  readonly outcome: object | null;
  readonly access_changes: object[];
  readonly access_changes_total: number;
}

/** A preview lists at most this many changes (part 6.17); `access_changes_total` counts them all. */
export const PREVIEW_CHANGES_LISTED = 1000;

/**
 * The write, or (`dryRun`) its preview answered in the write's own shape (the bulk routes, whose
 * `dry_run` answer is the same per-item results): the same statements run, its transactions roll
 * back, nothing is written or announced.
 */
export async function writeOrRollBack<T>(dryRun: boolean, write: () => Promise<T>): Promise<T> {
  if (!dryRun) return write();
  return (await previewOf(write)).outcome;
}

/**
 * The write, or (`dryRun`) its preview: the same code runs, its transaction rolls back, and the
 * answer is 200 `{dry_run, outcome, access_changes}`. A write that would fail throws its error as
 * it would (nothing was written either way).
 */
export async function writeOrPreview<T extends object>(
  dryRun: boolean,
  write: () => Promise<ResourceResponse<T> | NoContent>,
): Promise<ResourceResponse<T> | ResourceResponse<PreviewAnswer> | NoContent> {
  if (!dryRun) return write();
  const { outcome, preview } = await previewOf(write);
  const data = outcome instanceof ResourceResponse ? outcome.data : null;
  const answer: PreviewAnswer = {
    dry_run: true,
    outcome: data instanceof RawJson ? (JSON.parse(data.json) as object) : data,
    access_changes: preview.access_changes.slice(0, PREVIEW_CHANGES_LISTED),
    access_changes_total: preview.access_changes.length,
  };
  return new ResourceResponse(answer, { status: 200 });
}
