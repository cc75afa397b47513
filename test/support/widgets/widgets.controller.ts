import { Body, Controller, Delete, Get, Patch, Post, Query } from '@nestjs/common';
import { IdParam } from '../../../src/platform/http/id.pipe.js';
import { IfMatchHeader, type IfMatch } from '../../../src/platform/http/etag.js';
import { Public } from '../../../src/platform/http/public.decorator.js';
import { CreateWidgetDto, UpdateWidgetDto } from './widget.dto.js';
import { WidgetsService } from './widgets.service.js';

/** Test-only routes, mounted by the e2e suite and never by the server. */
@Public()
@Controller('v1/test')
export class WidgetsController {
  constructor(private readonly widgets: WidgetsService) {}

  @Get('widgets')
  list(@Query() query: Record<string, unknown>) {
    return this.widgets.list(query);
  }

  @Get('widgets/:id')
  get(@IdParam() id: number, @Query('include_deleted') includeDeleted?: string) {
    return this.widgets.get(id, includeDeleted === 'true');
  }

  @Post('widgets')
  create(@Body() dto: CreateWidgetDto) {
    return this.widgets.create(dto);
  }

  @Patch('widgets/:id')
  update(@IdParam() id: number, @Body() dto: UpdateWidgetDto, @IfMatchHeader() ifMatch: IfMatch) {
    return this.widgets.update(id, dto, ifMatch);
  }

  @Delete('widgets/:id')
  remove(@IdParam() id: number, @IfMatchHeader() ifMatch: IfMatch) {
    return this.widgets.remove(id, ifMatch);
  }

  @Post('widgets/:id/restore')
  restore(@IdParam() id: number, @IfMatchHeader() ifMatch: IfMatch) {
    return this.widgets.restore(id, ifMatch);
  }

  @Get('boom')
  boom(): never {
    throw new Error('relation "secret_table" does not exist at /srv/app/internal.ts:42');
  }
}
