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

/**
 * A device with another user's authority on it (`target`, the record an operator reads) and the
 * operator's own authority there (`own`) holding `permissions`.
 */
export async function deviceWithAuthorities(
  holderId: number,
  permissions: string[],
): Promise<{ device: number; target: number; own: number }> {
  const device = await createDevice();
  const [other] = await sql<{ id: number }>(
    "INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'Other holder', 4, 2) RETURNING id",
    [`other-${randomUUID()}@example.com`],
  );
  if (other === undefined) throw new Error('user insert returned no row');
  const target = await createAuthority(device.id, other.id);
  const own = await createAuthority(device.id, holderId, { permissions });
  return { device: device.id, target, own };
}

/** `count` more live authorities for the user, each on a new device (one statement). */
export async function moreAuthorities(userId: number, count: number): Promise<void> {
  await sql(
    `WITH d AS (INSERT INTO devices (serial_number, name)
                SELECT 'SN-MANY-' || gen_random_uuid(), 'many' FROM generate_series(1, $2) RETURNING id)
     INSERT INTO authorities (device_id, user_id) SELECT id, $1::bigint FROM d`,
    [userId, count],
  );
}

/** The authorities the user's cached auth context carries (null: more than it carries; undefined: no entry). */
export async function carriedAuthorities(
  entries: { get(key: string): Promise<{ readonly entry?: { readonly json: string } }> },
  userId: number,
): Promise<unknown> {
  const { entry } = await entries.get(`auth:user:${userId}`);
  return entry === undefined || entry.json === ''
    ? undefined
    : (JSON.parse(entry.json) as { authorities: unknown }).authorities;
}
