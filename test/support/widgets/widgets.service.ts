import { Injectable } from '@nestjs/common';
import { objectOf } from '../../../src/platform/cache/decode.js';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  creationStamp,
  deletionStamp,
  restorationStamp,
  updateStamp,
} from '../../../src/platform/audit/actor-stamps.js';
import { AuditService, diffChanges } from '../../../src/platform/audit/audit.service.js';
import { CacheAside, entryOf } from '../../../src/platform/cache/cache-aside.js';
import { cacheKeys } from '../../../src/platform/cache/cache-keys.js';
import { CacheEntries } from '../../../src/platform/cache/cache-entries.js';
import { ApiError } from '../../../src/platform/http/api-error.js';
import { assertIfMatch, type IfMatch } from '../../../src/platform/http/etag.js';
import { parseListQuery } from '../../../src/platform/http/list/list-query.parser.js';
import { runList } from '../../../src/platform/http/list/list-runner.js';
import { listSpec } from '../../../src/platform/http/list/list-spec.js';
import { ListResponse, NoContent, RawJson, ResourceResponse } from '../../../src/platform/http/responses.js';
import { UnitOfWork, type Tx } from '../../../src/platform/database/unit-of-work.js';
import type { CreateWidgetDto, UpdateWidgetDto } from './widget.dto.js';
import { table } from '../../../src/platform/database/table.js';

const TEST_WIDGETS = table('test_widgets');

export interface Widget {
  id: number;
  version: number;
  name: string;
  category: string;
  weight: number;
  active: boolean;
  is_deleted: boolean;
}

const COLUMNS =
  'id, version, name, category, weight, active, created_at, updated_at, created_by, updated_by, is_deleted, deleted_at, deleted_by';

export const WIDGET_LIST = listSpec({
  from: 'test_widgets',
  select: COLUMNS,
  sort: ['id', 'name', 'weight', 'created_at'],
  filters: { category: { enum: ['tool', 'toy', 'part'] }, weight: 'int', active: 'bool' },
  search: ['name', 'category'],
  deletedColumn: 'is_deleted',
});

function notFound(id: number): ApiError {
  return new ApiError('ROUTE_NOT_FOUND', `Widget ${id} does not exist`, { widget_id: id });
}

/** A miniature domain service written exactly as real ones are, to prove the platform end to end. */
@Injectable()
export class WidgetsService {
  /** Database loads made by the cache-aside wrapper (for the single-flight test). */
  loads = 0;
  /** Delay inserted between reading the row and filling the cache (for the stale-fill race test). */
  fillDelayMs = 0;
  private readonly cached: CacheAside<Widget>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    cache: CacheEntries,
  ) {
    this.cached = new CacheAside(
      cache,
      (id) => cacheKeys.resource('test_widget', id),
      async (id) => {
        this.loads += 1;
        const row = await this.find(this.uow.reader, id);
        if (this.fillDelayMs > 0) await sleep(this.fillDelayMs);
        return row === undefined ? undefined : entryOf(row);
      },
      objectOf<Widget>({ id: 'number' }),
    );
  }

  list(query: Record<string, unknown>): Promise<ListResponse<Widget>> {
    return runList<Widget>(this.uow.reader, WIDGET_LIST, parseListQuery(WIDGET_LIST, query));
  }

  async get(id: number, includeDeleted: boolean): Promise<ResourceResponse<Widget>> {
    const read = await this.cached.get(id);
    if (read === undefined || (read.entry.deleted && !includeDeleted)) throw notFound(id);
    return new ResourceResponse<Widget>(new RawJson(read.entry.json), {
      cache: read.cache,
      version: read.entry.version,
    });
  }

  async create(dto: CreateWidgetDto): Promise<ResourceResponse<Widget>> {
    const row = await this.uow.run(async (tx) => {
      const stamp = creationStamp(tx);
      const [created] = await tx.write<Widget[]>(
        TEST_WIDGETS,
        `INSERT INTO test_widgets (name, category, weight, created_by, updated_by) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
        [dto.name, dto.category, dto.weight ?? 0, stamp.created_by, stamp.updated_by],
      );
      if (created === undefined) throw new Error('insert returned no row');
      await this.audit.record(tx, 'test_widget.create', created.id, {
        changes: diffChanges(null, created, ['name', 'category', 'weight']),
      });
      this.rebuildAfterCommit(tx, created);
      return created;
    });
    return ResourceResponse.created(row, '/v1/test/widgets');
  }

  async update(id: number, dto: UpdateWidgetDto, ifMatch: IfMatch): Promise<ResourceResponse<Widget>> {
    const row = await this.uow.run(async (tx) => {
      const before = await this.lockLive(tx, id);
      assertIfMatch(ifMatch, before.version);
      const [after] = await tx.write<Widget[][]>(
        TEST_WIDGETS,
        `UPDATE test_widgets SET name = COALESCE($2, name), weight = COALESCE($3, weight), active = COALESCE($4, active), updated_by = $5 WHERE id = $1 RETURNING ${COLUMNS}`,
        [id, dto.name ?? null, dto.weight ?? null, dto.active ?? null, updateStamp(tx).updated_by],
      );
      const updated = after?.[0];
      if (updated === undefined) throw notFound(id);
      await this.audit.record(tx, 'test_widget.update', id, {
        changes: diffChanges(before, updated, ['name', 'weight', 'active']),
      });
      this.rebuildAfterCommit(tx, updated);
      return updated;
    });
    return new ResourceResponse(row);
  }

  async remove(id: number, ifMatch: IfMatch): Promise<ResourceResponse<Widget> | NoContent> {
    return this.uow.run(async (tx) => {
      const before = await this.lock(tx, id);
      if (before.is_deleted) return NoContent.instance;
      assertIfMatch(ifMatch, before.version);
      const stamp = deletionStamp(tx);
      const [after] = await tx.write<Widget[][]>(
        TEST_WIDGETS,
        `UPDATE test_widgets SET is_deleted = true, deleted_at = $2, deleted_by = $3, updated_by = $4 WHERE id = $1 RETURNING ${COLUMNS}`,
        [id, stamp.deleted_at, stamp.deleted_by, stamp.updated_by],
      );
      const deleted = after?.[0];
      if (deleted === undefined) throw notFound(id);
      await this.audit.record(tx, 'test_widget.delete', id, { changes: { is_deleted: [false, true] } });
      this.rebuildAfterCommit(tx, deleted);
      return new ResourceResponse(deleted);
    });
  }

  async restore(id: number, ifMatch: IfMatch): Promise<ResourceResponse<Widget> | NoContent> {
    return this.uow.run(async (tx) => {
      const before = await this.lock(tx, id);
      if (!before.is_deleted) return NoContent.instance;
      assertIfMatch(ifMatch, before.version);
      const stamp = restorationStamp(tx);
      const [after] = await tx.write<Widget[][]>(
        TEST_WIDGETS,
        `UPDATE test_widgets SET is_deleted = false, deleted_at = NULL, deleted_by = NULL, updated_by = $2 WHERE id = $1 RETURNING ${COLUMNS}`,
        [id, stamp.updated_by],
      );
      const restored = after?.[0];
      if (restored === undefined) throw notFound(id);
      await this.audit.record(tx, 'test_widget.restore', id, { changes: { is_deleted: [true, false] } });
      this.rebuildAfterCommit(tx, restored);
      return new ResourceResponse(restored);
    });
  }

  private rebuildAfterCommit(tx: Tx, row: Widget): void {
    tx.afterCommit(() => this.cached.refresh(row.id, entryOf(row)));
  }

  private async find(db: Tx['db'], id: number): Promise<Widget | undefined> {
    const [row] = await db.query<Widget[]>(`SELECT ${COLUMNS} FROM test_widgets WHERE id = $1`, [id]);
    return row;
  }

  private async lock(tx: Tx, id: number): Promise<Widget> {
    const [row] = await tx.db.query<Widget[]>(`SELECT ${COLUMNS} FROM test_widgets WHERE id = $1 FOR UPDATE`, [id]);
    if (row === undefined) throw notFound(id);
    return row;
  }

  private async lockLive(tx: Tx, id: number): Promise<Widget> {
    const row = await this.lock(tx, id);
    if (row.is_deleted) throw notFound(id);
    return row;
  }
}
