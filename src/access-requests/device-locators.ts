import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DeviceLocators, deviceOfRecord } from '../platform/auth/device-locators.js';
import { AccessRequestsRepository } from './access-requests.repository.js';

/** `deviceOf(ACCESS_REQUEST)`: the device an access request asks about. */
export const ACCESS_REQUEST = 'access_request';

/** Registers how the guard finds an access request's device (404 first), for approve and deny. */
@Injectable()
export class AccessRequestDeviceLocator implements OnModuleInit {
  constructor(
    private readonly locators: DeviceLocators,
    private readonly requests: AccessRequestsRepository,
  ) {}

  onModuleInit(): void {
    this.locators.register(
      ACCESS_REQUEST,
      deviceOfRecord((id, prefetched) => this.requests.read(id, prefetched), 'ACCESS_REQUEST_NOT_FOUND'),
    );
  }
}
