import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { MobileDevicesController } from './mobile-devices.controller.js';
import { MobileDevicesRepository } from './mobile-devices.repository.js';
import { MobileDevicesService } from './mobile-devices.service.js';
import { EventsModule } from '../events/events.module.js';

/** Mobile devices that receive push (part 6.9). */
@Module({
  imports: [UsersModule, EventsModule],
  controllers: [MobileDevicesController],
  providers: [MobileDevicesRepository, MobileDevicesService],
  exports: [MobileDevicesService],
})
export class MobileDevicesModule {}
