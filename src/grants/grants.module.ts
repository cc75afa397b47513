import { Module } from '@nestjs/common';
import { CatalogueController } from './catalogue.controller.js';
import { CatalogueService } from './catalogue.service.js';

/** Permissions, roles, and (next) permission grants and authority permissions. */
@Module({ controllers: [CatalogueController], providers: [CatalogueService] })
export class GrantsModule {}
