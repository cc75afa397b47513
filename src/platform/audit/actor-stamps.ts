import { currentActorId } from '../http/request-context.js';

/** Audit fields for a new record: the acting user, or null for a system flow. */
export function creationStamp(): { created_by: number | null; updated_by: number | null } {
  const actor = currentActorId();
  return { created_by: actor, updated_by: actor };
}

export function updateStamp(): { updated_by: number | null } {
  return { updated_by: currentActorId() };
}

export function deletionStamp(): {
  is_deleted: true;
  deleted_at: Date;
  deleted_by: number | null;
  updated_by: number | null;
} {
  const actor = currentActorId();
  return { is_deleted: true, deleted_at: new Date(), deleted_by: actor, updated_by: actor };
}

export function restorationStamp(): {
  is_deleted: false;
  deleted_at: null;
  deleted_by: null;
  updated_by: number | null;
} {
  return { is_deleted: false, deleted_at: null, deleted_by: null, updated_by: currentActorId() };
}
