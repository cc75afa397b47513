import type { ListSpec } from '../http/list/list-spec.js';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** How a resource table is read: what a row shows, its version, where it joins, how it lists. */
export interface TableShape {
  /** The resource's fields in contract order, as a select list (trusted: written by the repository). */
  readonly columns: string;
  /**
   * The row version (the ETag and the cache entry's version): the `version` column by default, or
   * an expression for rows that keep none (`1` for rows never changed, a revocation's `2`).
   */
  readonly version?: string;
  /** FROM clause of reads when the resource joins other tables (default: the table)… */
  readonly from?: string;
  /** …and the id column in it (default `id`). */
  readonly idColumn?: string;
  /** The list route's spec (filters, sort, search). */
  readonly list?: ListSpec;
}

/**
 * A table the service writes, declared once by the repository that owns it, with its shape when
 * it is a resource. Writes go through `tx.write(table, …)`, which records the table so its cached
 * list pages become unusable after the commit; no repository keeps that list by hand. The name is
 * checked to be a plain lower-case identifier, so a descriptor interpolated into a statement
 * (`${AUTHORITIES}`) cannot inject.
 */
export class Table {
  constructor(
    readonly name: string,
    readonly shape?: TableShape,
  ) {
    if (!IDENTIFIER.test(name)) throw new Error(`not a table name: ${name}`);
  }

  /** `<version> AS version, <columns>`: a row as the repository reads it, its version first. */
  get selected(): string {
    const shape = this.shapeOf();
    return `${shape.version ?? 'version'} AS version, ${shape.columns}`;
  }

  /** The shape of a resource table; an error for a table declared without one (a programming error). */
  shapeOf(): TableShape {
    if (this.shape === undefined) throw new Error(`${this.name} is declared without a shape`);
    return this.shape;
  }

  toString(): string {
    return this.name;
  }
}

/** Every table declared so far, in declaration order (a spec checks each against the schema). */
const declared: Table[] = [];

export function table(name: string, shape?: TableShape): Table {
  const descriptor = new Table(name, shape);
  declared.push(descriptor);
  return descriptor;
}

export function declaredTables(): readonly Table[] {
  return declared;
}
