import type { Tx, UnitOfWork } from './unit-of-work.js';

/** Repeats one batch in its own short transaction until a batch finds nothing; answers the total. */
export async function inBatches(uow: UnitOfWork, batch: (tx: Tx) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const count = await uow.run(batch);
    total += count;
    if (count === 0) return total;
  }
}
