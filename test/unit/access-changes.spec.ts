import { accessDifference, accessEntries } from '../../src/access-model/access-changes.js';
import { isDeviceScoped, PERMISSIONS } from '../../src/platform/auth/permissions.js';
import { authorityFacts, subjectOf } from '../support/access-facts.js';

const NOW = Date.parse('2030-01-01T12:00:00.000Z');
const DEVICE_SCOPED = PERMISSIONS.map((p) => p.code).filter(isDeviceScoped);

const subject = subjectOf;
const authority = authorityFacts;

describe('access entries: what the access questions answer, per user', () => {
  it('an operator owning a device: its role permissions everywhere, every device-scoped permission on the device', () => {
    const entries = accessEntries([subject('operator')], [authority({ owner: true })], NOW);
    const everywhere = entries.filter((e) => e.device_id === null);
    expect(everywhere.every((e) => e.decided_by === 'role')).toBe(true);
    expect(everywhere.map((e) => e.permission_code)).toContain('access_requests.create');
    const onDevice = entries.filter((e) => e.device_id === 3);
    expect(onDevice.map((e) => e.permission_code).sort()).toEqual([...DEVICE_SCOPED].sort());
    expect(new Set(onDevice.map((e) => e.decided_by))).toEqual(new Set(['device_owner']));
  });

  it('a device entry stands beside the same permission allowed everywhere (as /users/{id}/access lists it)', () => {
    const entries = accessEntries([subject('admin')], [authority({ owner: true })], NOW);
    expect(entries).toContainEqual({
      user_id: 11,
      device_id: null,
      permission_code: 'authorities.revoke',
      decided_by: 'role',
    });
    expect(entries).toContainEqual({
      user_id: 11,
      device_id: 3,
      permission_code: 'authorities.revoke',
      decided_by: 'device_owner',
    });
  });

  it('a suspended user, a member and an expired grant or authority permission allow nothing', () => {
    const held = authority({
      authority_permissions: [{ code: 'authorities.read', expires_at: new Date(NOW).toISOString() }],
    });
    expect(accessEntries([subject('operator', { active: false })], [authority({ owner: true })], NOW)).toEqual([]);
    expect(accessEntries([subject('member')], [authority({ owner: true })], NOW)).toEqual([]);
    expect(accessEntries([subject('viewer')], [held], NOW).filter((e) => e.device_id !== null)).toEqual([]);
    expect(accessEntries([subject('viewer')], [held], NOW - 1).filter((e) => e.device_id !== null)).toEqual([
      { user_id: 11, device_id: 3, permission_code: 'authorities.read', decided_by: 'authority_permission' },
    ]);
    const granted = subject('viewer', {
      grants: [{ id: 5, code: 'audit.read', expires_at: new Date(NOW).toISOString() }],
    });
    expect(accessEntries([granted], [], NOW - 1)).toContainEqual({
      user_id: 11,
      device_id: null,
      permission_code: 'audit.read',
      decided_by: 'permission_grant',
    });
    expect(accessEntries([granted], [], NOW).map((e) => e.permission_code)).not.toContain('audit.read');
  });
});

describe('access difference: gained and lost, nothing for a change of way', () => {
  it('lists what only one side has, with the way that decided it there', () => {
    const before = accessEntries([subject('operator')], [authority({ owner: true })], NOW);
    const after = accessEntries(
      [subject('operator')],
      [authority({ authority_permissions: [{ code: 'devices.read', expires_at: null }] })],
      NOW,
    );
    const changes = accessDifference(before, after);
    expect(changes.every((c) => c.change === 'lost' && c.decided_by === 'device_owner' && c.device_id === 3)).toBe(
      true,
    );
    expect(changes.map((c) => c.permission_code)).not.toContain('devices.read');
    expect(changes).toHaveLength(DEVICE_SCOPED.length - 1);
  });

  it('a role change: permissions gained and lost everywhere (device null), device entries untouched', () => {
    const facts = [authority({ owner: true })];
    const changes = accessDifference(
      accessEntries([subject('viewer')], facts, NOW),
      accessEntries([subject('operator')], facts, NOW),
    );
    expect(changes.length).toBeGreaterThan(0);
    expect(changes.every((c) => c.device_id === null && c.decided_by === 'role')).toBe(true);
    expect(changes).toContainEqual({
      user_id: 11,
      device_id: null,
      permission_code: 'access_requests.create',
      decided_by: 'role',
      change: 'gained',
    });
    expect(changes.find((c) => c.permission_code === 'access.read')?.change).toBe('lost');
  });

  it('no change, no entry; the answer is ordered by user, device, permission', () => {
    const same = accessEntries([subject('admin')], [authority({ owner: true })], NOW);
    expect(accessDifference(same, same)).toEqual([]);
    const changes = accessDifference([], [...same].reverse());
    const devices = changes.map((c) => c.device_id);
    expect(devices.indexOf(3)).toBe(devices.filter((d) => d === null).length);
    const onDevice = changes.filter((c) => c.device_id === 3).map((c) => c.permission_code);
    expect(onDevice).toEqual([...onDevice].sort((a, b) => a.localeCompare(b)));
  });
});
