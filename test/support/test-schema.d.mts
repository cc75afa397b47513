/** The test-only tables (the widgets), given the migrations' record and soft-delete column lists. */
export function testSchema(baseColumns: string, softDeleteColumns: string): string;
