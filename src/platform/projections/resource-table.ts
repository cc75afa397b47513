import type { EntityManager } from 'typeorm';
import { CacheAside, type CachedRead } from '../cache/cache-aside.js';
import { cacheKeys } from '../cache/cache-keys.js';
import { objectOf } from '../cache/decode.js';
import type { CacheEntry } from '../cache/cache-store.js';
import { ApiError } from '../http/api-error.js';
import type { RecordNotFoundCode } from '../http/error-codes.js';
import type { Scope } from '../http/list/list-sql.js';
import { RawJson, ResourceResponse, type ListResponse } from '../http/responses.js';
import { ListPages } from './list-pages.js';
import type { Projections } from './projections.js';
import type { Prefetched } from './prefetched.js';
import { preparedQuery, preparedWrite } from '../database/prepared.js';
import type { Table, TableShape } from '../database/table.js';
import type { Tx, UnitOfWork } from '../database/unit-of-work.js';

/** A row as read: the resource's fields plus its version (the ETag, kept out of the JSON). */
export interface VersionedRow {
  readonly id: number;
  readonly version: number;
  readonly is_deleted?: boolean;
}

export interface ResourceTableOptions {
  /** The table, declared with its shape (columns, version, joins, list spec). */
  readonly table: Table;
  /** Singular resource name used in cache keys, e.g. `authority`. */
  readonly type: string;
  /** The 404 of a missing record, e.g. `USER_NOT_FOUND`. */
  readonly notFound: RecordNotFoundCode;
}

/** A column value computed by PostgreSQL at the write (`now()`), so every row of a write shares its clock. */
export const NOW = Symbol('now()');

/** Values of a write by column name: a parameter, or `NOW`. */
export type ColumnValues<Column extends string> = Partial<Readonly<Record<Column, unknown>>>;

/** `col = $n` assignments (or the column and value lists of an INSERT) numbered from `first`. */
export function assignments(
  values: Readonly<Record<string, unknown>>,
  first: number,
): { columns: string[]; placeholders: string[]; params: unknown[] } {
  const columns: string[] = [];
  const placeholders: string[] = [];
  const params: unknown[] = [];
  for (const [column, value] of Object.entries(values)) {
    if (value === undefined) continue;
    if (!/^[a-z_][a-z0-9_]*$/.test(column)) throw new Error(`not a column name: ${column}`);
    columns.push(column);
    if (value === NOW) {
      placeholders.push('now()');
    } else {
      params.push(value);
      placeholders.push(`$${first + params.length - 1}`);
    }
  }
  return { columns, placeholders, params };
}

/** What a detail projection must be to be sent: an object with a numeric `id` (checked against its key). */
export const DETAIL_SHAPE = { id: 'number' } as const;

/** The resource as sent: every field except `version`. */
export function withoutVersion<Row extends VersionedRow>(row: Row): Omit<Row, 'version'> {
  const { version: _version, ...resource } = row;
  return resource;
}

/**
 * A table's repository base: cached detail reads (cache-aside), locked reads inside a write,
 * typed `insert` and `patch` (no hand-written SET fragments), and the after-commit refresh that
 * every write registers by itself through `changed`.
 */
export class ResourceTable<Row extends VersionedRow, Column extends string = string> {
  private readonly cached: CacheAside<Omit<Row, 'version'>>;
  /** The table `insert` and `patch` write. */
  private readonly target: Table;
  private readonly shape: TableShape;
  /** Cached list pages, also for the table's other lists (a device's ownership history). */
  protected readonly pages: ListPages;

  constructor(
    private readonly options: ResourceTableOptions,
    protected readonly uow: UnitOfWork,
    projections: Projections,
  ) {
    this.target = options.table;
    this.shape = options.table.shapeOf();
    this.pages = new ListPages(projections);
    this.cached = new CacheAside(
      projections.entries,
      (id) => cacheKeys.resource(options.type, id),
      async (id) => {
        const row = await projections.load((db) => this.find(db, id));
        return row === undefined ? undefined : this.entryOf(row);
      },
      objectOf<Omit<Row, 'version'>>(DETAIL_SHAPE),
      (value) => value.id,
    );
    // The same check of a hit answers it before the handler (stored-answers.ts) and in `detail`.
    projections.registerDetail(options.type, (id, prefetched) => this.cached.hit(id, prefetched));
  }

  /**
   * A page of the list route through the cache: the query parsed against the table's `ListSpec`
   * (every problem a 400), an optional extra condition (authorization row filtering), the capped
   * count, and `present` applied to the rows before they are cached.
   */
  list<Listed = Omit<Row, 'version'>, Item = Listed>(
    query: Record<string, unknown>,
    scope?: Scope,
    present?: (rows: readonly Listed[]) => Item[],
  ): Promise<ListResponse<Item>> {
    const spec = this.shape.list;
    if (spec === undefined) throw new Error(`${this.target.name} has no list spec`);
    return this.pages.read<Listed, Item>(spec, query, scope, present);
  }

  /** The cached detail; undefined when the record does not exist at all. */
  read(id: number, prefetched?: Prefetched): Promise<CachedRead<Omit<Row, 'version'>> | undefined> {
    return this.cached.get(id, prefetched);
  }

  /**
   * A detail GET: the cached entry sent as it is stored, 404 when the record does not exist (or
   * is deleted, unless `includeDeleted`).
   */
  async detail(
    id: number,
    includeDeleted = false,
    prefetched?: Prefetched,
  ): Promise<ResourceResponse<Omit<Row, 'version'>>> {
    const read = await this.cached.get(id, prefetched);
    if (read === undefined || (read.entry.deleted && !includeDeleted))
      throw ApiError.notFound(this.options.notFound, id);
    return new ResourceResponse<Omit<Row, 'version'>>(new RawJson(read.entry.json), {
      cache: read.cache,
      version: read.entry.version,
    });
  }

  async find(db: EntityManager, id: number): Promise<Row | undefined> {
    const { from = this.target.name, idColumn = 'id' } = this.shape;
    const [row] = await db.query<Row[]>(`SELECT ${this.target.selected} FROM ${from} WHERE ${idColumn} = $1`, [id]);
    return row;
  }

  /** The row under `FOR UPDATE`, deleted or not; 404 when it does not exist. */
  async lock(tx: Tx, id: number): Promise<Row> {
    const [row] = await preparedQuery<Row>(
      tx.db,
      `${this.target.name}-lock`,
      `SELECT ${this.target.selected} FROM ${this.target.name} WHERE id = $1 FOR UPDATE`,
      [id],
      'auto',
    );
    if (row === undefined) throw ApiError.notFound(this.options.notFound, id);
    return row;
  }

  /** As `lock`, but a deleted record is a 404 too (every action except restore). */
  async lockLive(tx: Tx, id: number): Promise<Row> {
    const row = await this.lock(tx, id);
    if (row.is_deleted === true) throw ApiError.notFound(this.options.notFound, id);
    return row;
  }

  /**
   * `INSERT … RETURNING` the row; with `onConflict` (e.g. \`(device_id, user_id) DO NOTHING\`) it may
   * insert nothing and answers undefined. Registers the row's after-commit refresh (`changed`).
   */
  async insert(tx: Tx, values: ColumnValues<Column>, onConflict?: string): Promise<Row | undefined> {
    this.assertPlainTable('insert');
    const { columns, placeholders, params } = assignments(values, 1);
    const conflict = onConflict === undefined ? '' : ` ON CONFLICT ${onConflict}`;
    const [row] = await tx.write<Row[]>(
      this.target,
      preparedWrite(
        `${this.target.name}-insert`,
        `INSERT INTO ${this.target.name} (${columns.join(', ')}) VALUES (${placeholders.join(', ')})${conflict} RETURNING ${this.target.selected}`,
      ),
      params,
    );
    if (row !== undefined) await this.changed(tx, [row], columns);
    return row;
  }

  /**
   * `UPDATE … SET <columns> WHERE id = $1 RETURNING` the row (404 when it does not exist), and
   * registers its after-commit refresh (`changed`), so no service can forget one.
   */
  async patch(tx: Tx, id: number, values: ColumnValues<Column>): Promise<Row> {
    this.assertPlainTable('patch');
    const { columns, placeholders, params } = assignments(values, 2);
    if (columns.length === 0) throw new Error(`patch of ${this.target.name} ${id} sets no column`);
    const set = columns.map((column, index) => `${column} = ${placeholders[index] ?? 'NULL'}`).join(', ');
    const [rows] = await tx.write<[Row[], number]>(
      this.target,
      preparedWrite(
        `${this.target.name}-patch`,
        `UPDATE ${this.target.name} SET ${set} WHERE id = $1 RETURNING ${this.target.selected}`,
      ),
      [id, ...params],
    );
    const row = rows[0];
    if (row === undefined) throw ApiError.notFound(this.options.notFound, id);
    await this.changed(tx, [row], columns);
    return row;
  }

  /** `insert` and `patch` return `columns` from the table itself: a joined read (`from`) needs its own write. */
  private assertPlainTable(operation: string): void {
    if (this.shape.from !== undefined)
      throw new Error(`${this.target.name} is read through a join: write it with its own ${operation}`);
  }

  /**
   * What a write of these rows must do to the cache: by default rebuild each detail entry after
   * commit. Tables with dependent projections (the auth context, device authority sets) extend
   * it; `columns` are those the write set, so a change no projection reads can leave it alone.
   */
  changed(tx: Tx, rows: readonly Row[], columns: readonly string[] = []): Promise<void> {
    // What the feed's event of this write shows as `data` (the audit event is recorded after it).
    for (const row of rows) tx.noteResource(this.options.type, this.presentedOnFeed(row));
    return this.onChanged(tx, rows, columns);
  }

  /** The row as the event feed shows it: as the API does, unless a resource keeps something back. */
  protected presentedOnFeed(row: Row): { readonly id: number } {
    return withoutVersion(row);
  }

  /** The cache side of `changed`, which subclasses extend. */
  protected onChanged(tx: Tx, rows: readonly Row[], _columns: readonly string[] = []): Promise<void> {
    tx.afterCommit(async () => {
      await Promise.all(rows.map((row) => this.refresh(row)));
    });
    return Promise.resolve();
  }

  /** Marks detail entries stale at these versions (their next read loads them); older fills are refused. */
  invalidate(versions: ReadonlyMap<number, number>): Promise<boolean> {
    return this.cached.invalidate(versions);
  }

  /** Rebuilds the detail entries of many rows at their versions, a few hundred per call. */
  refreshRows(rows: readonly Row[]): Promise<void> {
    return this.cached.refreshMany(rows.map((row) => [row.id, this.entryOf(row)] as const));
  }

  /** Rebuilds the detail entry at the row's version. */
  refresh(row: Row): Promise<void> {
    return this.cached.refresh(row.id, this.entryOf(row));
  }

  entryOf(row: Row): CacheEntry {
    return { version: row.version, deleted: row.is_deleted === true, json: JSON.stringify(withoutVersion(row)) };
  }
}

/** A single-resource response for a row: the resource without `version`, the version as ETag. */
export function respondWith<Row extends VersionedRow>(
  row: Row,
  options: { status?: 200 | 201; location?: string } = {},
): ResourceResponse<Omit<Row, 'version'>> {
  return new ResourceResponse(withoutVersion(row), { ...options, version: row.version });
}
