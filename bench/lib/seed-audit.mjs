// The audit benchmark's data set: AUDIT_EVENTS events (10 000 000 by default) over the last year,
// inserted with one set-based statement. The migrations' own indexes on audit_events are read
// from pg_indexes, dropped for the load and created again from those very definitions, which is
// several times faster than maintaining seven indexes row by row and measures the real schema.
export const AUDIT_EVENTS = Number(process.env.BENCH_AUDIT_EVENTS ?? 10_000_000);
export const ACTORS = 1000;
export const ACTIONS = [
  'user.create',
  'user.update',
  'user.delete',
  'user.restore',
  'user.activate',
  'user.suspend',
  'user.reset_pin',
  'session.revoke',
  'device.create',
  'device.update',
  'device.transfer_owner',
  'authority.create',
  'authority.update',
  'authority.delete',
  'authority.restore',
  'authority.activate',
  'authority.deactivate',
  'authority.revoke',
  'authority_permission.grant',
  'authority_permission.revoke',
  'permission_grant.grant',
  'permission_grant.revoke',
  'inbox_message.create',
  'inbox_message.update',
  'inbox_message.delete',
  'message_read_state.update',
  'mobile_device.create',
  'mobile_device.deactivate',
];

export async function seedAuditEvents(client, log = () => undefined) {
  const started = Date.now();
  const { rows: indexes } = await client.query(
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'audit_events' AND indexname <> 'audit_events_pkey' ORDER BY indexname",
  );
  for (const index of indexes) await client.query(`DROP INDEX ${index.indexname}`);
  // This bench measures the audit trail, not the event feed: the seed goes into audit_events only.
  // Three seconds apart: 10 000 000 events span about 347 days. Two events per request id.
  await client.query(
    `INSERT INTO audit_events (occurred_at, actor_id, action, resource_type, resource_id, request_id, reason, changes)
   SELECT now() - make_interval(secs => g * 3),
          1 + (g * 7919) % ${ACTORS},
          (ARRAY[${ACTIONS.map((action) => `'${action}'`).join(', ')}])[1 + g % ${ACTIONS.length}],
          split_part((ARRAY[${ACTIONS.map((action) => `'${action}'`).join(', ')}])[1 + g % ${ACTIONS.length}], '.', 1),
          (1 + (g * 104729) % 2000000)::text,
          'bench-req-' || (g / 2),
          NULL,
          '{}'::jsonb
   FROM generate_series(1::bigint, ${AUDIT_EVENTS}::bigint) g`,
  );
  log(`audit events: ${AUDIT_EVENTS} inserted in ${(Date.now() - started) / 1000} s`);
  for (const index of indexes) await client.query(index.indexdef);
  log(`indexes rebuilt: ${indexes.map((index) => index.indexname).join(', ')}`);
  await client.query('VACUUM ANALYZE audit_events');
  // Write the load's dirty pages out now rather than during the measurements.
  await client.query('CHECKPOINT');
  return { seconds: (Date.now() - started) / 1000, indexes: indexes.length };
}
