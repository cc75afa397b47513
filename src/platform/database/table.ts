const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/**
 * A table the service writes, declared once by the repository that owns it. Writes go through
 * `tx.write(table, …)`, which records the table so its cached list pages become unusable after
 * the commit; no repository keeps that list by hand. The name is checked to be a plain lower-case
 * identifier, so a descriptor interpolated into a statement (`${AUTHORITIES}`) cannot inject.
 */
export class Table {
  constructor(readonly name: string) {
    if (!IDENTIFIER.test(name)) throw new Error(`not a table name: ${name}`);
  }

  toString(): string {
    return this.name;
  }
}

export function table(name: string): Table {
  return new Table(name);
}
