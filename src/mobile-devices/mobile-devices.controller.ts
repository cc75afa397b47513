import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import { MOBILE_DEVICE_LIST } from './mobile-devices.repository.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { ListResponse, ResourceResponse } from '../platform/http/responses.js';
import {
  DeactivateMobileDeviceDto,
  MobileDeviceDto,
  RefreshTokenDto,
  RegisterMobileDeviceDto,
} from './mobile-device.dto.js';
import { MobileDevicesService } from './mobile-devices.service.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';

/** `/v1/admin/mobile-devices` (part 6.9). */
@ApiTags('mobile devices')
@Controller('v1/admin/mobile-devices')
export class MobileDevicesController {
  constructor(private readonly devices: MobileDevicesService) {}

  @ListRoute({
    summary: 'List mobile devices',
    returns: MobileDeviceDto,
    spec: MOBILE_DEVICE_LIST,
  })
  @Authorize({
    permission: 'mobile_devices.read',
  })
  @CachedRead({
    answerStored: true,
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<MobileDeviceDto>> {
    return this.devices.list(query);
  }

  @Get(':id')
  @Authorize({
    permission: 'mobile_devices.read',
  })
  @Describe({
    summary: 'Get a mobile device (cached)',
    returns: MobileDeviceDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('mobile_device'),
    answerStored: true,
  })
  get(
    @IdParam() id: number,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<MobileDeviceDto>> {
    return this.devices.get(id, prefetched);
  }

  @Post()
  @Authorize({
    permission: 'mobile_devices.create',
  })
  @Describe({
    summary: 'Register a mobile device for push',
    description: 'The token is stored and never returned; `push_token_hint` shows its last 6 characters.',
    returns: MobileDeviceDto,
    status: 201,
    errors: [400, 404, 409],
  })
  register(@Body() dto: RegisterMobileDeviceDto): Promise<ResourceResponse<MobileDeviceDto>> {
    return this.devices.register(dto);
  }

  @Post(':id/deactivate')
  @Authorize({
    permission: 'mobile_devices.deactivate',
  })
  @Describe({
    summary: 'Stop pushing to a device',
    returns: MobileDeviceDto,
    errors: [400, 404, 409, 412],
  })
  deactivate(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() dto: DeactivateMobileDeviceDto,
  ): Promise<ResourceResponse<MobileDeviceDto>> {
    return this.devices.deactivate(id, dto.reason, ifMatch);
  }

  @Post(':id/refresh-token')
  @Authorize({
    permission: 'mobile_devices.refresh_token',
  })
  @Describe({
    summary: 'Replace the push token',
    description: 'Re-activates a device that was deactivated because the push provider rejected its token.',
    returns: MobileDeviceDto,
    errors: [400, 404, 409, 412],
  })
  refreshToken(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() dto: RefreshTokenDto,
  ): Promise<ResourceResponse<MobileDeviceDto>> {
    return this.devices.refreshToken(id, dto.push_token, ifMatch);
  }
}
