import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../http/api-error.js';
import { IS_PUBLIC } from '../http/public.decorator.js';
import { currentRequest } from '../http/request-context.js';
import { attachAuthContext, authContextOf } from './auth-context.js';
import { Authentication } from './authentication.js';
import { DeviceLocators } from './device-locators.js';
import { AccessEvaluator, permissionDenied } from './access-evaluator.js';
import { AUTHORIZE, type RouteAccess } from './authorize.decorator.js';
import { PREVIEW_ROUTE_CONFIG } from '../http/openapi/describe.decorator.js';
import { routeConfigPart } from '../http/route-parts.js';

/**
 * The global guard, deny by default (part 5): public routes pass; every other route needs a
 * valid token and session (layer 1, usually settled before the body was read: `Authentication`),
 * a role with admin access (layer 2) and the permission its `@Authorize` declares (layer 3,
 * through the evaluator). A route that declares nothing is refused even for a super admin.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly devices: DeviceLocators,
    private readonly authorization: AccessEvaluator,
    private readonly authentication: Authentication,
  ) {}

  /** Each handler's metadata, read once: the guard runs on every request. */
  private readonly rules = new WeakMap<object, { readonly isPublic: boolean; readonly rule?: RouteAccess }>();

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const { isPublic, rule } = this.ruleOf(context);
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    let auth = authContextOf(request);
    if (auth === undefined) {
      auth = await this.authentication.authenticate(request);
      attachAuthContext(request, auth);
    }
    const requestContext = currentRequest();
    if (requestContext !== undefined) requestContext.actor_id = auth.user_id;

    if (!this.authorization.hasAdminAccess(auth)) {
      throw new ApiError('ROLE_FORBIDDEN', `The role ${auth.role.code} has no access to the admin API`, {
        role_id: auth.role.id,
      });
    }
    if (rule === undefined)
      throw new ApiError('PERMISSION_DENIED', 'This route declares no permission and is closed', { permission: null });
    if (rule.check !== 'service' && !this.authorization.admitGlobally(auth, rule.permission).allowed) {
      // Only now find the device (a cached read): callers allowed everywhere never pay for it.
      if (rule.device === undefined) throw permissionDenied(rule.permission);
      await this.authorization.admitOnDevice(auth, rule.permission, await this.devices.locate(request, rule.device));
    }
    refuseDryRun(request);
    return true;
  }

  private ruleOf(context: ExecutionContext): { readonly isPublic: boolean; readonly rule?: RouteAccess } {
    const handler = context.getHandler();
    const known = this.rules.get(handler);
    if (known !== undefined) return known;
    const targets = [handler, context.getClass()];
    const found = {
      isPublic: this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC, targets) === true,
      rule: this.reflector.get<RouteAccess | undefined>(AUTHORIZE, handler),
    };
    this.rules.set(handler, found);
    return found;
  }
}

/** `dry_run`, `DRY_RUN`, `dryRun`, `dry-run`: any spelling a client may use for a preview. */
const DRY_RUN = /^dry[-_]?run$/i;

/**
 * A write that cannot be previewed refuses `dry_run` rather than ignoring it like other unknown
 * query parameters: a client that previews an approval and then "previews" a deny or a close the
 * same way must not have made it (part 6.17 lists the writes that preview; those parse it
 * themselves with `@DryRun()`). Bulk writes take their `dry_run` in the body.
 */
function refuseDryRun(request: FastifyRequest): void {
  if (routeConfigPart(request, PREVIEW_ROUTE_CONFIG) === true || request.method === 'GET' || request.method === 'HEAD')
    return;
  for (const name of Object.keys((request.query as Record<string, unknown> | undefined) ?? {}))
    if (DRY_RUN.test(name))
      throw ApiError.field(name, 'unknown', `${name} is not a parameter of this route: it cannot be previewed`);
}
