import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * A preview (`?dry_run=true`, part 6.17): the write runs as it would, in its transaction, which is
 * then rolled back instead of committed, so it answers exactly (its errors too) and leaves nothing
 * behind: no row, no audit or feed event, no cache work. What the write would change in anyone's
 * access is collected here instead of being announced.
 */
export interface Preview {
  readonly access_changes: object[];
}

const storage = new AsyncLocalStorage<Preview>();

/** Runs `write` as a preview; its transactions roll back at their end. */
export async function previewOf<T>(write: () => Promise<T>): Promise<{ outcome: T; preview: Preview }> {
  const preview: Preview = { access_changes: [] };
  const outcome = await storage.run(preview, write);
  return { outcome, preview };
}

/** The preview the current code runs in, if any. */
export function currentPreview(): Preview | undefined {
  return storage.getStore();
}
