import type { Tx } from '../database/unit-of-work.js';

/** The acting user of a write: its transaction's actor (`tx.actor`), null for a system flow. */
type Acting = Pick<Tx, 'actor'>;

/** Audit fields for a new record. */
export function creationStamp(tx: Acting): { created_by: number | null; updated_by: number | null } {
  return { created_by: tx.actor, updated_by: tx.actor };
}

export function updateStamp(tx: Acting): { updated_by: number | null } {
  return { updated_by: tx.actor };
}

export function deletionStamp(tx: Acting): {
  is_deleted: true;
  deleted_at: Date;
  deleted_by: number | null;
  updated_by: number | null;
} {
  return { is_deleted: true, deleted_at: new Date(), deleted_by: tx.actor, updated_by: tx.actor };
}

export function restorationStamp(tx: Acting): {
  is_deleted: false;
  deleted_at: null;
  deleted_by: null;
  updated_by: number | null;
} {
  return { is_deleted: false, deleted_at: null, deleted_by: null, updated_by: tx.actor };
}
