import { Platform1763683200000 } from './1763683200000-platform.js';
import { UsersAndSessions1763769600000 } from './1763769600000-users-and-sessions.js';
import { DevicesAuthoritiesGrants1763856000000 } from './1763856000000-devices-authorities-grants.js';
import { InboxDevicesPush1763942400000 } from './1763942400000-inbox-devices-push.js';
import { IdempotencyKeys1764028800000 } from './1764028800000-idempotency-keys.js';
import { ListIndexes1764115200000 } from './1764115200000-list-indexes.js';
import { Trust1764201600000 } from './1764201600000-trust.js';
import { NextPermissions1764288000000 } from './1764288000000-next-permissions.js';
import { JobResults1764374400000 } from './1764374400000-job-results.js';
import { BulkJobItems1764460800000 } from './1764460800000-bulk-job-items.js';
import { NextChangeIndexes1764547200000 } from './1764547200000-next-change-indexes.js';
import { Events1764633600000 } from './1764633600000-events.js';
import { EventsOrder1764720000000 } from './1764720000000-events-order.js';
import { EventsCommitOrder1764806400000 } from './1764806400000-events-commit-order.js';
import { Webhooks1764892800000 } from './1764892800000-webhooks.js';
import { EventsData1764979200000 } from './1764979200000-events-data.js';
import { AccessHistory1765065600000 } from './1765065600000-access-history.js';
import { WebhookPreviousSecrets1765152000000 } from './1765152000000-webhook-previous-secrets.js';
import { EventsPurgeHorizon1765238400000 } from './1765238400000-events-purge-horizon.js';
import { AccessGovernance1765324800000 } from './1765324800000-access-governance.js';
import { ExpiringAuthorityPermissions1765411200000 } from './1765411200000-expiring-authority-permissions.js';
import { AccessRequests1765497600000 } from './1765497600000-access-requests.js';
import { AuthorityRightsNow1765584000000 } from './1765584000000-authority-rights-now.js';
import { LiveAuthorityPermissionsIndex1765670400000 } from './1765670400000-live-authority-permissions-index.js';
import { AccessEvents1765756800000 } from './1765756800000-access-events.js';
import { AccessPathUses1765843200000 } from './1765843200000-access-path-uses.js';
import { AccessReviews1765929600000 } from './1765929600000-access-reviews.js';
import { AuthorityPermissionHolders1766016000000 } from './1766016000000-authority-permission-holders.js';
import { Groups1766102400000 } from './1766102400000-groups.js';
import { GroupAuthorities1766188800000 } from './1766188800000-group-authorities.js';
import { GroupHistoryReads1766275200000 } from './1766275200000-group-history-reads.js';
import { GroupReviews1766361600000 } from './1766361600000-group-reviews.js';
import { AccessEventDeferrals1766448000000 } from './1766448000000-access-event-deferrals.js';
import { ScimUsers1766534400000 } from './1766534400000-scim-users.js';
import { GroupMemberStreams1766620800000 } from './1766620800000-group-member-streams.js';

/** Migrations in the order they apply; the data source loads these classes, not a file glob. */
export const MIGRATIONS = [
  Platform1763683200000,
  UsersAndSessions1763769600000,
  DevicesAuthoritiesGrants1763856000000,
  InboxDevicesPush1763942400000,
  IdempotencyKeys1764028800000,
  ListIndexes1764115200000,
  Trust1764201600000,
  NextPermissions1764288000000,
  JobResults1764374400000,
  BulkJobItems1764460800000,
  NextChangeIndexes1764547200000,
  Events1764633600000,
  EventsOrder1764720000000,
  EventsCommitOrder1764806400000,
  Webhooks1764892800000,
  EventsData1764979200000,
  AccessHistory1765065600000,
  WebhookPreviousSecrets1765152000000,
  EventsPurgeHorizon1765238400000,
  AccessGovernance1765324800000,
  ExpiringAuthorityPermissions1765411200000,
  AccessRequests1765497600000,
  AuthorityRightsNow1765584000000,
  LiveAuthorityPermissionsIndex1765670400000,
  AccessEvents1765756800000,
  AccessPathUses1765843200000,
  AccessReviews1765929600000,
  AuthorityPermissionHolders1766016000000,
  Groups1766102400000,
  GroupAuthorities1766188800000,
  GroupHistoryReads1766275200000,
  GroupReviews1766361600000,
  AccessEventDeferrals1766448000000,
  ScimUsers1766534400000,
  GroupMemberStreams1766620800000,
];

/**
 * Tables written only by the database's own triggers, as each migration that creates such a
 * trigger declares (`static triggerWritten`): the unit of work's check of a transaction's writes
 * (under test) does not expect a repository to have written them.
 */
export const TRIGGER_WRITTEN_TABLES: readonly string[] = MIGRATIONS.flatMap((migration) =>
  'triggerWritten' in migration && Array.isArray(migration.triggerWritten)
    ? migration.triggerWritten.filter((name): name is string => typeof name === 'string')
    : [],
);
