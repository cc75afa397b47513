import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiError } from '../common/api-error.js';
import { IS_PUBLIC } from '../common/public.decorator.js';

/**
 * Global guard: a route is reachable only when it is explicitly public or declares its
 * permission (checked by the authorization layers). Anything else is refused.
 */
@Injectable()
export class DenyByDefaultGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const isPublic = this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic === true) return true;
    throw new ApiError('AUTH_TOKEN_MISSING', 'A bearer token is required');
  }
}
