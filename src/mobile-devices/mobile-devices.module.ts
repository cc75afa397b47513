import { Module } from '@nestjs/common';
import { MobileDevicesController } from './mobile-devices.controller.js';
import { MobileDevicesService } from './mobile-devices.service.js';

/** Mobile devices that receive push (part 6.9). */
@Module({ controllers: [MobileDevicesController], providers: [MobileDevicesService], exports: [MobileDevicesService] })
export class MobileDevicesModule {}
