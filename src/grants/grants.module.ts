import { GroupsModule } from '../groups/groups.module.js';
import { Module } from '@nestjs/common';
import { AuthoritiesModule } from '../authorities/authorities.module.js';
import { UsersModule } from '../users/users.module.js';
import { PermissionReferences } from './permission-references.repository.js';
import { AuthorityPermissionsController } from './authority-permissions.controller.js';
import { AuthorityPermissionsRepository } from './authority-permissions.repository.js';
import { AuthorityPermissionsService } from './authority-permissions.service.js';
import { BulkAuthorityPermissionsService } from './bulk-authority-permissions.service.js';
import { CatalogueService } from './catalogue.service.js';
import { AuthorityPermissionDeviceLocator } from './device-locators.js';
import { PermissionGrantsController } from './permission-grants.controller.js';
import { PermissionGrantsRepository } from './permission-grants.repository.js';
import { PermissionGrantsService } from './permission-grants.service.js';
import { PermissionsController } from './permissions.controller.js';
import { RolesController } from './roles.controller.js';

/** The permission catalogue and roles, permission grants and authority permissions (parts 6.4–6.6). */
@Module({
  imports: [UsersModule, AuthoritiesModule, GroupsModule],
  controllers: [PermissionsController, RolesController, PermissionGrantsController, AuthorityPermissionsController],
  providers: [
    PermissionReferences,
    CatalogueService,
    PermissionGrantsRepository,
    PermissionGrantsService,
    AuthorityPermissionsRepository,
    AuthorityPermissionsService,
    BulkAuthorityPermissionsService,
    AuthorityPermissionDeviceLocator,
  ],
  // AuthorityPermissionsService: `grantExpiring`, for an access-request approval; the other two:
  // `revokeReviewed`, for an access review's close.
  exports: [
    PermissionReferences,
    AuthorityPermissionsService,
    BulkAuthorityPermissionsService,
    PermissionGrantsService,
  ],
})
export class GrantsModule {}
