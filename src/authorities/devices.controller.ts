import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Get, Patch, Post, Query } from '@nestjs/common';
import { DryRun } from '../access-model/dry-run.decorator.js';
import { writeOrPreview, type PreviewAnswer } from '../platform/database/write-or-preview.js';
import { DEVICE_LIST, TRANSFER_LIST } from './devices.repository.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { ApiTags } from '@nestjs/swagger';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { IfMatchHeader, type IfMatch } from '../platform/http/etag.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { ListResponse, NoContent, ResourceResponse } from '../platform/http/responses.js';
import { deviceOf } from '../platform/auth/device-locators.js';
import { DEVICE } from './device-locators.js';
import { DevicesService } from './devices.service.js';
import {
  CreateDeviceDto,
  DeviceDto,
  OwnershipTransferDto,
  TransferOwnerDto,
  TransferResultDto,
  UpdateDeviceDto,
} from './dto/device.dto.js';
import { OwnershipService } from './ownership.service.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';

/** `/v1/admin/devices` (part 6.2). */
@ApiTags('devices')
@Controller('v1/admin/devices')
export class DevicesController {
  constructor(
    private readonly devices: DevicesService,
    private readonly ownership: OwnershipService,
  ) {}

  @ListRoute({
    summary: 'List devices',
    description: 'Without the global `devices.read`, only devices where an authority gives it.',
    returns: DeviceDto,
    spec: DEVICE_LIST,
  })
  @Authorize({
    permission: 'devices.read',
    check: 'service',
  })
  @CachedRead({
    answerStored: true,
  })
  list(@Actor() actor: AuthContext, @Query() query: Record<string, unknown>): Promise<ListResponse<DeviceDto>> {
    return this.devices.list(actor, query);
  }

  @Get(':id')
  @Authorize({
    permission: 'devices.read',
    device: deviceOf(DEVICE),
  })
  @Describe({
    summary: 'Get a device (cached)',
    returns: DeviceDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('device'),
    answerStored: true,
  })
  get(
    @IdParam() id: number,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<DeviceDto>> {
    return this.devices.get(id, prefetched);
  }

  @Post()
  @Authorize({
    permission: 'devices.create',
  })
  @Describe({
    summary: 'Register a device',
    returns: DeviceDto,
    status: 201,
    errors: [400, 409],
  })
  create(@Body() dto: CreateDeviceDto): Promise<ResourceResponse<DeviceDto>> {
    return this.devices.create(dto);
  }

  @Patch(':id')
  @Authorize({
    permission: 'devices.update',
    device: deviceOf(DEVICE),
  })
  @Describe({
    summary: 'Rename a device or change its model',
    returns: DeviceDto,
    errors: [400, 404, 412],
  })
  update(@Write() { id, ifMatch }: RecordWrite, @Body() dto: UpdateDeviceDto): Promise<ResourceResponse<DeviceDto>> {
    return this.devices.update(id, dto, ifMatch);
  }

  @Post(':device_id/transfer-owner')
  @Authorize({
    permission: 'devices.transfer_owner',
    device: deviceOf(DEVICE, 'device_id'),
  })
  @Describe({
    summary: 'Make another user the owner of the device',
    description: 'The only way `owner` becomes true; one transaction, one owner at all times, one history row.',
    returns: TransferResultDto,
    errors: [400, 404, 412, 422],
    preview: true,
  })
  transferOwner(
    @Actor() actor: AuthContext,
    @IdParam('device_id') deviceId: number,
    @Body() dto: TransferOwnerDto,
    @IfMatchHeader() ifMatch: IfMatch,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<TransferResultDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.ownership.transfer(actor, deviceId, dto, ifMatch));
  }

  @ListRoute({
    path: ':device_id/ownership-transfers',
    summary: 'The ownership history of a device',
    returns: OwnershipTransferDto,
    spec: TRANSFER_LIST,
    errors: [404],
  })
  @Authorize({
    permission: 'devices.read',
    device: deviceOf(DEVICE, 'device_id'),
  })
  @CachedRead({
    prefetch: detailOf('device', 'device_id'),
  })
  transfers(
    @IdParam('device_id') deviceId: number,
    @Query() query: Record<string, unknown>,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ListResponse<OwnershipTransferDto>> {
    return this.ownership.history(deviceId, query, prefetched);
  }
}
