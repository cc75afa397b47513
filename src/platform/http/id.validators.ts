import { applyDecorators } from '@nestjs/common';
import { IsInt, Max, Min } from 'class-validator';

/** A record id in a body: a positive integer a bigint column and a JSON number can both hold. */
export function IsId(): PropertyDecorator {
  return applyDecorators(IsInt(), Min(1), Max(Number.MAX_SAFE_INTEGER));
}

/** An id of a small catalogue (roles, permissions): a positive 32-bit integer. */
export function IsCatalogueId(): PropertyDecorator {
  return applyDecorators(IsInt(), Min(1), Max(2_147_483_647));
}
