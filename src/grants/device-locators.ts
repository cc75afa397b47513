import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DeviceLocators, deviceOfRecord } from '../platform/auth/device-locators.js';
import { AuthorityPermissionsRepository } from './authority-permissions.repository.js';

/** `deviceOf(AUTHORITY_PERMISSION)`: the device of an authority permission. */
export const AUTHORITY_PERMISSION = 'authority_permission';

/** Registers how the guard finds the device of an authority permission (404 first). */
@Injectable()
export class AuthorityPermissionDeviceLocator implements OnModuleInit {
  constructor(
    private readonly locators: DeviceLocators,
    private readonly authorityPermissions: AuthorityPermissionsRepository,
  ) {}

  onModuleInit(): void {
    this.locators.register(
      AUTHORITY_PERMISSION,
      deviceOfRecord(
        (id, prefetched) => this.authorityPermissions.read(id, prefetched),
        'AUTHORITY_PERMISSION_NOT_FOUND',
      ),
    );
  }
}
