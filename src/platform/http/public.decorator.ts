import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'admin-api:public';

/** Marks a route (or controller) as reachable without a token; every other route is denied by default. */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);
