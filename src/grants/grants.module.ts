import { Module } from '@nestjs/common';
import { AuthorityPermissionsController } from './authority-permissions.controller.js';
import { AuthorityPermissionsRepository } from './authority-permissions.repository.js';
import { AuthorityPermissionsService } from './authority-permissions.service.js';
import { AuthzCheckService } from './authz-check.service.js';
import { AuthzController } from './authz.controller.js';
import { BulkAuthorityPermissionsService } from './bulk-authority-permissions.service.js';
import { CatalogueService } from './catalogue.service.js';
import { PermissionGrantsController } from './permission-grants.controller.js';
import { PermissionGrantsRepository } from './permission-grants.repository.js';
import { PermissionGrantsService } from './permission-grants.service.js';
import { PermissionsController } from './permissions.controller.js';
import { RolesController } from './roles.controller.js';

/** The permission catalogue and roles, permission grants, authority permissions and `/authz/check`. */
@Module({
  controllers: [
    PermissionsController,
    RolesController,
    PermissionGrantsController,
    AuthorityPermissionsController,
    AuthzController,
  ],
  providers: [
    CatalogueService,
    PermissionGrantsRepository,
    PermissionGrantsService,
    AuthorityPermissionsRepository,
    AuthorityPermissionsService,
    BulkAuthorityPermissionsService,
    AuthzCheckService,
  ],
})
export class GrantsModule {}
