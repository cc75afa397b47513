/** How a list filter's query value is parsed: strictly, so `?is_active=yes` is a 400, not a silent no-op. */
export type FilterType = 'int' | 'bool' | 'string' | 'timestamp' | { readonly enum: readonly string[] };

export interface FilterSpec {
  /** SQL expression compared with the value (trusted: comes from code, never from the request). */
  readonly column: string;
  readonly type: FilterType;
  /** How the column is compared with the value: equality unless a range bound (`occurred_after`). */
  readonly operator?: '=' | '>' | '<';
}

/** Everything the list machinery needs to know about one resource (part 2 of the contract). */
export interface ListSpec {
  /** `FROM` clause, e.g. `users u` (trusted). */
  readonly from: string;
  /** Select list producing the response shape (trusted). */
  readonly select: string;
  /** Column of the primary key, used for the `id:asc` tie-break. */
  readonly idColumn: string;
  /** Sortable field → SQL expression. */
  readonly sort: Readonly<Record<string, string>>;
  readonly defaultSort: string;
  readonly filters: Readonly<Record<string, FilterSpec>>;
  /** Text columns searched by `q` (case-insensitive substring); empty means `q` is not accepted. */
  readonly search: readonly string[];
  /** The soft-delete flag column, for resources that have one. */
  readonly deletedColumn?: string;
  /**
   * Rows are never deleted or changed (the audit trail): a filter that once matched more than
   * 10 000 rows always will, so its capped count need not be run again.
   */
  readonly appendOnly?: boolean;
  /**
   * `meta.total` is always counted exactly, as with `count=exact`: for lists whose scope bounds
   * the matches to an indexed set small enough to count (one job's results: at most 100 000).
   */
  readonly exactCount?: boolean;
  /** Every table the page is read from: a write to any of them makes its cached pages unusable (part 7). */
  readonly tables: readonly string[];
  /**
   * A timestamp column whose passing changes what the page shows (an expiry judged at `now()`):
   * a cached page is only good until the next such moment in the table.
   */
  readonly changesAt?: string;
}

export type SortDirection = 'asc' | 'desc';

export interface ListQuery {
  readonly page: number;
  readonly page_size: number;
  readonly sort: readonly { readonly field: string; readonly direction: SortDirection }[];
  readonly q: string | undefined;
  readonly include_deleted: boolean;
  readonly count: 'exact' | 'auto';
  readonly filters: Readonly<Record<string, string | number | boolean>>;
}

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 25;
export const MAX_Q_LENGTH = 200;
/** Up to this many matches `meta.total` is always exact (part 2). */
export const EXACT_COUNT_LIMIT = 10_000;

/** A list as a resource declares it: names stand for their own columns unless given an expression. */
export interface ListDeclaration {
  readonly from: string;
  readonly select: string;
  /** The alias that qualifies plain names (`g` makes `user_id` mean `g.user_id`); none for one table. */
  readonly alias?: string;
  /** Sortable fields, each its own column. */
  readonly sort: readonly string[];
  /** `id:asc` unless said. */
  readonly defaultSort?: string;
  /** Filter name → its type (the column of that name), or a full spec for an expression or a range. */
  readonly filters?: Readonly<Record<string, FilterType | FilterSpec>>;
  readonly search?: readonly string[];
  readonly deletedColumn?: string;
  readonly appendOnly?: boolean;
  /** Tables read by sub-selects of `select` (a count of members): a write to them makes the pages unusable too. */
  readonly alsoReads?: readonly string[];
  /** See `ListSpec.exactCount`. */
  readonly exactCount?: boolean;
  /** See `ListSpec.changesAt`. */
  readonly changesAt?: string;
}

/** The tables a FROM clause names (its first table and every JOIN), for list-page invalidation. */
export function tablesOf(from: string): string[] {
  return [...from.matchAll(/(?:^\s*|\bJOIN\s+)([a-z_][a-z0-9_]*)/gi)].map((match) =>
    (match[1] as string).toLowerCase(),
  );
}

function isFilterSpec(value: FilterType | FilterSpec): value is FilterSpec {
  return typeof value === 'object' && 'column' in value;
}

/** Every table some list reads, as the specs were declared (a `lists` cache rebuild bumps them all). */
const LISTED_TABLES = new Set<string>();

export function listedTables(): string[] {
  return [...LISTED_TABLES].sort();
}

/** The full `ListSpec` of a declaration. */
export function listSpec(declaration: ListDeclaration): ListSpec {
  const { alias, sort, filters = {}, defaultSort = 'id:asc', search = [], alsoReads = [], ...rest } = declaration;
  const column = (name: string): string => (alias === undefined ? name : `${alias}.${name}`);
  const tables = [...new Set([...tablesOf(declaration.from), ...alsoReads])];
  for (const table of tables) LISTED_TABLES.add(table);
  return {
    ...rest,
    tables,
    idColumn: column('id'),
    sort: Object.fromEntries(sort.map((name) => [name, column(name)])),
    defaultSort,
    filters: Object.fromEntries(
      Object.entries(filters).map(([name, type]) => [name, isFilterSpec(type) ? type : { column: column(name), type }]),
    ),
    search,
  };
}
