import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DeviceLocators, deviceOfRecord } from '../platform/auth/device-locators.js';
import { ApiError } from '../platform/http/api-error.js';
import { AuthoritiesRepository } from './authorities.repository.js';
import { DevicesRepository } from './devices.repository.js';

/** Records whose device a route can be scoped by: `deviceOf(DEVICE)`, `deviceOf(AUTHORITY)`. */
export const DEVICE = 'device';
export const AUTHORITY = 'authority';

/** Registers how the guard finds the device of a device id and of an authority (404s first). */
@Injectable()
export class AuthorityDeviceLocators implements OnModuleInit {
  constructor(
    private readonly locators: DeviceLocators,
    private readonly devices: DevicesRepository,
    private readonly authorities: AuthoritiesRepository,
  ) {}

  onModuleInit(): void {
    this.locators.register(DEVICE, async (id, prefetched) => {
      if ((await this.devices.read(id, prefetched)) === undefined) throw ApiError.notFound('DEVICE_NOT_FOUND', id);
      return id;
    });
    this.locators.register(
      AUTHORITY,
      deviceOfRecord((id, prefetched) => this.authorities.read(id, prefetched), 'AUTHORITY_NOT_FOUND'),
    );
  }
}
