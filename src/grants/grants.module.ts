import { Module } from '@nestjs/common';
import { AuthorityPermissionsRepository } from './authority-permissions.repository.js';
import { AuthorityPermissionsService } from './authority-permissions.service.js';
import { AuthzCheckService } from './authz-check.service.js';
import { BulkAuthorityPermissionsService } from './bulk-authority-permissions.service.js';
import { CatalogueController } from './catalogue.controller.js';
import { CatalogueService } from './catalogue.service.js';
import { AuthorityPermissionsController, AuthzCheckController, PermissionGrantsController } from './grants.controller.js';
import { PermissionGrantsService } from './permission-grants.service.js';

/** The permission catalogue and roles, permission grants, authority permissions and `/authz/check`. */
@Module({
  controllers: [CatalogueController, PermissionGrantsController, AuthorityPermissionsController, AuthzCheckController],
  providers: [CatalogueService, PermissionGrantsService, AuthorityPermissionsRepository, AuthorityPermissionsService, BulkAuthorityPermissionsService, AuthzCheckService],
})
export class GrantsModule {}
