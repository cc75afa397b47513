import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../http/api-error.js';
import type { RecordNotFoundCode } from '../http/error-codes.js';
import { pathId } from '../http/id.pipe.js';
import { prefetchedOf, type Prefetched } from '../projections/prefetched.js';

/**
 * The device of the record a path id names, or the record's 404 (`ApiError`) when it does not
 * exist: a missing record is a 404 before any device check (part 5).
 */
export type DeviceLookup = (id: number, prefetched: Prefetched | undefined) => Promise<number>;

/**
 * The lookup of a record whose cached detail carries its device (an authority, an authority
 * permission): the record's 404 when it does not exist, else its `device_id`.
 */
export function deviceOfRecord(
  read: (
    id: number,
    prefetched: Prefetched | undefined,
  ) => Promise<{ readonly value: { readonly device_id: number } } | undefined>,
  notFound: RecordNotFoundCode,
): DeviceLookup {
  return async (id, prefetched) => {
    const found = await read(id, prefetched);
    if (found === undefined) throw ApiError.notFound(notFound, id);
    return found.value.device_id;
  };
}

/** How a device-scoped route finds its device: the record kind its path parameter names. */
export interface DeviceOf {
  readonly record: string;
  readonly param: string;
}

/** `@Authorize({ device: deviceOf('authority', 'id') })`: the device of the authority at `:id`. */
export function deviceOf(record: string, param = 'id'): DeviceOf {
  return { record, param };
}

/**
 * The lookups behind `deviceOf`, registered by the feature module that owns each record (at its
 * module init): the guard on the platform floor finds a device without knowing any feature.
 */
@Injectable()
export class DeviceLocators {
  private readonly lookups = new Map<string, DeviceLookup>();

  register(record: string, lookup: DeviceLookup): void {
    if (this.lookups.has(record)) throw new Error(`a device locator for "${record}" is already registered`);
    this.lookups.set(record, lookup);
  }

  /** The device the route acts on; the path id is parsed as its `@IdParam` would (400 naming it). */
  locate(request: FastifyRequest, of: DeviceOf): Promise<number> {
    const lookup = this.lookups.get(of.record);
    // A route naming a record nobody registered is a programming error, found by the route specs.
    if (lookup === undefined) throw new Error(`no device locator is registered for "${of.record}"`);
    // The record's detail entry may have come with the auth context (`prefetch` on the route).
    return lookup(pathId(request, of.param), prefetchedOf(request));
  }
}
