import { Controller, Get, Module, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { MetadataScanner, ModulesContainer } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { AUTHORIZE, type RouteAccess } from '../../src/platform/auth/authorize.decorator.js';
import { buildOpenApi } from '../../src/platform/http/openapi/openapi.js';
import { IS_PUBLIC } from '../../src/platform/http/public.decorator.js';
import { actor } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';

/** Declares nothing: the guard must refuse it, and the listing must flag it. */
@Controller('v1/test/undeclared')
class UndeclaredController {
  @Get()
  open(): string {
    return 'should never be reached';
  }
}

@Module({ controllers: [UndeclaredController] })
class UndeclaredModule {}

/** `GET /v1/admin/users/:id → users.read`, `→ public`, or `→ UNDECLARED` for every controller route. */
function routeTable(app: NestFastifyApplication): string[] {
  const scanner = new MetadataScanner();
  const rows: string[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const type = wrapper.metatype as (new (...args: never[]) => object) | null;
      if (type === null) continue;
      const base = String(Reflect.getMetadata(PATH_METADATA, type) ?? '');
      for (const name of scanner.getAllMethodNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name] as object;
        const path = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
        if (path === undefined) continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number];
        const full = `/${[base, path]
          .map((part) => part.replace(/^\/|\/$/g, ''))
          .filter(Boolean)
          .join('/')}`;
        const rule = Reflect.getMetadata(AUTHORIZE, handler) as RouteAccess | undefined;
        const isPublic =
          Reflect.getMetadata(IS_PUBLIC, handler) === true || Reflect.getMetadata(IS_PUBLIC, type) === true;
        const where =
          rule?.check === 'service'
            ? ' (per device, in the service)'
            : rule?.device === undefined
              ? ''
              : ' (or on its device)';
        rows.push(
          `${method} ${full} → ${rule === undefined ? (isPublic ? 'public' : 'UNDECLARED') : rule.permission + where}`,
        );
      }
    }
  }
  return rows.sort();
}

// The reviewed list: a change here is a change of who may do what.
const EXPECTED = [
  'DELETE /scim/v2/Groups/:id → scim.provision',
  'DELETE /scim/v2/Users/:id → scim.provision',
  'DELETE /v1/admin/authorities/:id → authorities.delete (or on its device)',
  'DELETE /v1/admin/authority-permissions/:id → authority_permissions.revoke (or on its device)',
  'DELETE /v1/admin/groups/:id → groups.delete',
  'DELETE /v1/admin/inbox/:id → inbox.delete',
  'DELETE /v1/admin/users/:id → users.delete',
  'DELETE /v1/admin/webhook-endpoints/:id → webhooks.manage',
  'GET /health/live → public',
  'GET /health/ready → public',
  'GET /scim/v2/Groups → scim.provision',
  'GET /scim/v2/Groups/:id → scim.provision',
  'GET /scim/v2/ResourceTypes → public',
  'GET /scim/v2/Schemas → public',
  'GET /scim/v2/ServiceProviderConfig → public',
  'GET /scim/v2/Users → scim.provision',
  'GET /scim/v2/Users/:id → scim.provision',
  'GET /v1/admin/access-findings → access.read',
  'GET /v1/admin/access-requests → access_requests.read',
  'GET /v1/admin/access-requests/:id → access_requests.read',
  'GET /v1/admin/access-reviews → access_reviews.read',
  'GET /v1/admin/access-reviews/:id → access_reviews.read',
  'GET /v1/admin/access-reviews/:id/items → access_reviews.read',
  'GET /v1/admin/audit-events → audit.read',
  'GET /v1/admin/audit-events/:id → audit.read',
  'GET /v1/admin/authorities → authorities.read (per device, in the service)',
  'GET /v1/admin/authorities/:id → authorities.read (or on its device)',
  'GET /v1/admin/authority-permissions → authority_permissions.read (per device, in the service)',
  'GET /v1/admin/authority-permissions/:id → authority_permissions.read (or on its device)',
  'GET /v1/admin/authz/check → permission_grants.read',
  'GET /v1/admin/devices → devices.read (per device, in the service)',
  'GET /v1/admin/devices/:device_id/ownership-transfers → devices.read (or on its device)',
  'GET /v1/admin/devices/:id → devices.read (or on its device)',
  'GET /v1/admin/devices/:id/access → access.read',
  'GET /v1/admin/devices/:id/access-timeline → access.read',
  'GET /v1/admin/events → events.read',
  'GET /v1/admin/groups → groups.read',
  'GET /v1/admin/groups/:id → groups.read',
  'GET /v1/admin/groups/:id/members → groups.read',
  'GET /v1/admin/inbox → inbox.read',
  'GET /v1/admin/inbox/:id → inbox.read',
  'GET /v1/admin/jobs/:job_id → jobs.read',
  'GET /v1/admin/jobs/:job_id/results → jobs.read',
  'GET /v1/admin/message-read-state → read_state.read',
  'GET /v1/admin/message-read-state/:id → read_state.read',
  'GET /v1/admin/message-read-state/counts → read_state.read',
  'GET /v1/admin/mobile-devices → mobile_devices.read',
  'GET /v1/admin/mobile-devices/:id → mobile_devices.read',
  'GET /v1/admin/permission-grants → permission_grants.read',
  'GET /v1/admin/permission-grants/:id → permission_grants.read',
  'GET /v1/admin/permissions → permission_grants.read',
  'GET /v1/admin/roles → permission_grants.read',
  'GET /v1/admin/users → users.read',
  'GET /v1/admin/users/:id → users.read',
  'GET /v1/admin/users/:id/access → access.read',
  'GET /v1/admin/users/:id/groups → groups.read',
  'GET /v1/admin/users/:id/sessions → users.read',
  'GET /v1/admin/webhook-endpoints → webhooks.read',
  'GET /v1/admin/webhook-endpoints/:id → webhooks.read',
  'GET /v1/admin/webhook-endpoints/:id/deliveries → webhooks.read',
  'PATCH /scim/v2/Groups/:id → scim.provision',
  'PATCH /scim/v2/Users/:id → scim.provision',
  'PATCH /v1/admin/authorities/:id → authorities.update (or on its device)',
  'PATCH /v1/admin/devices/:id → devices.update (or on its device)',
  'PATCH /v1/admin/groups/:id → groups.update',
  'PATCH /v1/admin/inbox/:id → inbox.update',
  'PATCH /v1/admin/users/:id → users.update',
  'PATCH /v1/admin/webhook-endpoints/:id → webhooks.manage',
  'POST /scim/v2/Groups → scim.provision',
  'POST /scim/v2/Users → scim.provision',
  'POST /v1/admin/access-requests → access_requests.create',
  'POST /v1/admin/access-requests/:id/approve → access_requests.approve (or on its device)',
  'POST /v1/admin/access-requests/:id/cancel → access_requests.create',
  'POST /v1/admin/access-requests/:id/deny → access_requests.approve (or on its device)',
  'POST /v1/admin/access-reviews → access_reviews.manage',
  'POST /v1/admin/access-reviews/:id/cancel → access_reviews.manage',
  'POST /v1/admin/access-reviews/:id/close → access_reviews.manage',
  'POST /v1/admin/access-reviews/:id/decisions → access_reviews.decide (per device, in the service)',
  'POST /v1/admin/authorities → authorities.create (per device, in the service)',
  'POST /v1/admin/authorities/:id/activate → authorities.activate (or on its device)',
  'POST /v1/admin/authorities/:id/deactivate → authorities.deactivate (or on its device)',
  'POST /v1/admin/authorities/:id/restore → authorities.restore (or on its device)',
  'POST /v1/admin/authorities/:id/revoke → authorities.revoke (or on its device)',
  'POST /v1/admin/authority-permissions → authority_permissions.grant (per device, in the service)',
  'POST /v1/admin/authority-permissions/bulk-grant → authority_permissions.grant (per device, in the service)',
  'POST /v1/admin/authority-permissions/bulk-revoke → authority_permissions.revoke (per device, in the service)',
  'POST /v1/admin/cache/rebuild → cache.rebuild',
  'POST /v1/admin/devices → devices.create',
  'POST /v1/admin/devices/:device_id/transfer-owner → devices.transfer_owner (or on its device)',
  'POST /v1/admin/groups → groups.create',
  'POST /v1/admin/groups/:id/members → groups.manage_members',
  'POST /v1/admin/groups/:id/members/remove → groups.manage_members',
  'POST /v1/admin/groups/:id/restore → groups.restore',
  'POST /v1/admin/inbox → inbox.create',
  'POST /v1/admin/inbox/:id/restore → inbox.restore',
  'POST /v1/admin/inbox/:id/send-push → inbox.send_push',
  'POST /v1/admin/inbox/bulk-delete → inbox.delete',
  'POST /v1/admin/message-read-state/:id/archive → read_state.update',
  'POST /v1/admin/message-read-state/:id/mark-read → read_state.update',
  'POST /v1/admin/message-read-state/:id/pin → read_state.update',
  'POST /v1/admin/message-read-state/:id/snooze → read_state.update',
  'POST /v1/admin/mobile-devices → mobile_devices.create',
  'POST /v1/admin/mobile-devices/:id/deactivate → mobile_devices.deactivate',
  'POST /v1/admin/mobile-devices/:id/refresh-token → mobile_devices.refresh_token',
  'POST /v1/admin/permission-grants/grant → permission_grants.grant',
  'POST /v1/admin/permission-grants/revoke → permission_grants.revoke',
  'POST /v1/admin/users → users.create',
  'POST /v1/admin/users/:id/activate → users.activate',
  'POST /v1/admin/users/:id/reset-pin → users.reset_pin',
  'POST /v1/admin/users/:id/restore → users.restore',
  'POST /v1/admin/users/:id/revoke-sessions → users.revoke_sessions',
  'POST /v1/admin/users/:id/suspend → users.suspend',
  'POST /v1/admin/webhook-deliveries/:id/retry → webhooks.manage',
  'POST /v1/admin/webhook-endpoints → webhooks.manage',
  'POST /v1/admin/webhook-endpoints/:id/rotate-secret → webhooks.manage',
  'POST /v1/admin/webhook-endpoints/:id/test → webhooks.manage',
  'PUT /scim/v2/Groups/:id → scim.provision',
  'PUT /scim/v2/Users/:id → scim.provision',
];

describe('every route declares its permission (deny by default)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ widgets: false, redisUrl: null });
  });
  afterAll(() => t.close());

  it('matches the reviewed route → permission table, with no undeclared route', () => {
    const table = routeTable(t.app);
    expect(table.filter((row) => row.endsWith('UNDECLARED'))).toEqual([]);
    expect(table).toEqual(EXPECTED);
  });

  it('flags and refuses a route that declares nothing, even for a super_admin', async () => {
    const withUndeclared = await startApp({ widgets: false, redisUrl: null, imports: [UndeclaredModule] });
    try {
      expect(routeTable(withUndeclared.app)).toContain('GET /v1/test/undeclared → UNDECLARED');
      const { auth } = await actor('super_admin');
      const response = await withUndeclared.http().get('/v1/test/undeclared').set('Authorization', auth).expect(403);
      expect(response.body.error).toEqual({
        code: 'PERMISSION_DENIED',
        message: 'This route declares no permission and is closed',
        details: { permission: null },
      });
      await withUndeclared.http().get('/v1/test/undeclared').expect(401);
    } finally {
      await withUndeclared.close();
    }
  });

  it('documents each permission in the OpenAPI document as x-permission', () => {
    const documented: string[] = [];
    for (const [path, operations] of Object.entries(buildOpenApi(t.app).paths)) {
      for (const [method, operation] of Object.entries(operations as Record<string, { 'x-permission'?: string }>)) {
        if (path.startsWith('/v1/admin'))
          documented.push(
            `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')} → ${operation['x-permission'] ?? 'UNDOCUMENTED'}`,
          );
      }
    }
    expect(documented.sort()).toEqual(
      EXPECTED.filter((row) => row.includes(' /v1/admin')).map((row) => row.replace(/ \(.*\)$/, '')),
    );
  });
});
