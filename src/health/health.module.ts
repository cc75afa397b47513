import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { HealthController } from './health.controller.js';

@Module({ imports: [EventsModule], controllers: [HealthController] })
export class HealthModule {}
