import { randomUUID } from 'node:crypto';
import { sql } from './db.js';

/** Inserts a device straight into the database; `ownerId` also creates its owner authority. */
export async function createDevice(
  options: { ownerId?: number; name?: string } = {},
): Promise<{ id: number; serial_number: string }> {
  const serial = `SN-${randomUUID().slice(0, 13)}`;
  const [device] = await sql<{ id: number; serial_number: string }>(
    'INSERT INTO devices (serial_number, name, owner_user_id) VALUES ($1, $2, $3) RETURNING id, serial_number',
    [serial, options.name ?? 'Test device', options.ownerId ?? null],
  );
  if (device === undefined) throw new Error('device insert returned no row');
  if (options.ownerId !== undefined)
    await sql('INSERT INTO authorities (device_id, user_id, owner) VALUES ($1, $2, true)', [
      device.id,
      options.ownerId,
    ]);
  return device;
}

/** Inserts an authority (not the owner) with optional authority permissions by code. */
export async function createAuthority(
  deviceId: number,
  userId: number,
  options: { permissions?: string[]; expiresAt?: Date; isActive?: boolean } = {},
): Promise<number> {
  const [authority] = await sql<{ id: number }>(
    'INSERT INTO authorities (device_id, user_id, expires_at, is_active) VALUES ($1, $2, $3, $4) RETURNING id',
    [deviceId, userId, options.expiresAt ?? null, options.isActive ?? true],
  );
  if (authority === undefined) throw new Error('authority insert returned no row');
  for (const code of options.permissions ?? []) {
    await sql(
      'INSERT INTO authority_permissions (authority_id, permission_id) SELECT $1, id FROM permissions WHERE code = $2',
      [authority.id, code],
    );
  }
  return authority.id;
}
