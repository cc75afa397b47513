import { Module } from '@nestjs/common';
import { AccessHistoryRepository } from './access-history.repository.js';
import { AccessTimelineService } from './access-timeline.service.js';
import { AccessService } from './access.service.js';
import { AuthorityPermissionsController } from './authority-permissions.controller.js';
import { AuthorityPermissionsRepository } from './authority-permissions.repository.js';
import { AuthorityPermissionsService } from './authority-permissions.service.js';
import { AuthzCheckService } from './authz-check.service.js';
import { AuthzController } from './authz.controller.js';
import { BulkAuthorityPermissionsService } from './bulk-authority-permissions.service.js';
import { CatalogueService } from './catalogue.service.js';
import { AccessTimelineController } from './devices/access-timeline.controller.js';
import { DeviceAccessController } from './devices/access.controller.js';
import { PermissionGrantsController } from './permission-grants.controller.js';
import { PermissionGrantsRepository } from './permission-grants.repository.js';
import { PermissionGrantsService } from './permission-grants.service.js';
import { PermissionsController } from './permissions.controller.js';
import { RolesController } from './roles.controller.js';
import { UserAccessController } from './users/access.controller.js';

/**
 * The permission catalogue and roles, permission grants, authority permissions, `/authz/check`
 * and the access questions (who may act where, now and as of a moment).
 */
@Module({
  controllers: [
    PermissionsController,
    RolesController,
    PermissionGrantsController,
    AuthorityPermissionsController,
    AuthzController,
    DeviceAccessController,
    AccessTimelineController,
    UserAccessController,
  ],
  providers: [
    CatalogueService,
    PermissionGrantsRepository,
    PermissionGrantsService,
    AuthorityPermissionsRepository,
    AuthorityPermissionsService,
    BulkAuthorityPermissionsService,
    AuthzCheckService,
    AccessHistoryRepository,
    AccessService,
    AccessTimelineService,
  ],
})
export class GrantsModule {}
