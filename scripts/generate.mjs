#!/usr/bin/env node
// `npm run generate -- action <domain>[/<resource>] <verb> [--controller <resource>] [--device-param id|none]
// [--permission <code>] [--resource <name>]`: the project's `action` schematic with every option.
// `nest g action <domain>[/<resource>] <verb>` runs the same schematic, but the Nest CLI passes on
// only the two positionals; this runs it through the Angular devkit's own schematics CLI.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const OPTIONS = new Set(['controller', 'device-param', 'permission', 'resource']);
const [schematic, name, path, ...rest] = process.argv.slice(2);
if (schematic !== 'action' || name === undefined || path === undefined) {
  process.stderr.write(
    'usage: npm run generate -- action <domain>[/<resource>] <verb> [--controller <resource>] [--device-param id|none] [--permission <code>] [--resource <name>]\n',
  );
  process.exit(2);
}
const forwarded = [];
for (let index = 0; index < rest.length; index += 1) {
  const flag = rest[index] ?? '';
  const [key, inline] = flag.replace(/^--/, '').split('=');
  const value = inline ?? rest[index + 1];
  if (!flag.startsWith('--') || !OPTIONS.has(key ?? '') || value === undefined) {
    process.stderr.write(
      `unknown or incomplete option ${flag}; the options are ${[...OPTIONS].map((option) => `--${option}`).join(', ')}\n`,
    );
    process.exit(2);
  }
  if (inline === undefined) index += 1;
  forwarded.push(`--${key}=${value}`);
}
const cli = createRequire(import.meta.url).resolve('@angular-devkit/schematics-cli/bin/schematics.js');
const result = spawnSync(
  process.execPath,
  [cli, 'admin-api-schematics:action', `--name=${name}`, `--path=${path}`, ...forwarded, '--no-dry-run'],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
