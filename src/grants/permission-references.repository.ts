import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { ApiError } from '../platform/http/api-error.js';

/** What a write needs to know about a permission it names in its body. */
export interface PermissionReference {
  readonly id: number;
  readonly code: string;
  readonly device_scoped: boolean;
}

/** The catalogue's permissions named in other modules' request bodies; an unknown one is its contract 404. */
@Injectable()
export class PermissionReferences {
  /** The permission of the catalogue; 404 `PERMISSION_NOT_FOUND` otherwise. */
  async permission(db: EntityManager, id: number): Promise<PermissionReference> {
    const [row] = await db.query<PermissionReference[]>(
      'SELECT id, code, device_scoped FROM permissions WHERE id = $1',
      [id],
    );
    if (row === undefined) throw ApiError.notFound('PERMISSION_NOT_FOUND', id);
    return row;
  }
}
