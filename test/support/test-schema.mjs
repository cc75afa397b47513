// Plain ESM: the global setup (outside Jest's module mapper) and own-database.ts both use it.

// Throw-away table behind the test-only routes that exercise the platform; same base columns
// and version trigger as the real tables.
export const testSchema = (baseColumns, softDeleteColumns) => `
  CREATE TABLE test_widgets (${baseColumns}, ${softDeleteColumns},
    name text NOT NULL,
    category text NOT NULL,
    weight integer NOT NULL DEFAULT 0,
    active boolean NOT NULL DEFAULT true);
  CREATE TRIGGER test_widgets_version BEFORE UPDATE ON test_widgets FOR EACH ROW EXECUTE FUNCTION bump_row_version();
`;
