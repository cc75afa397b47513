import 'reflect-metadata';
import type { Settings } from './config/settings.js';
import { loadSettings, SettingsError } from './config/settings.js';
import { resolveDatabase } from './database/database-url.js';
import { migrate } from './database/migrate.js';

/** Messages go to stderr so that stdout carries only the command's result (a token, an id). */
function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

interface Command {
  readonly summary: string;
  run(settings: Settings, databaseUrl: string, args: readonly string[]): Promise<number>;
}

/** Every command; the usage text and the dispatch are both derived from this table. */
const COMMANDS: Readonly<Record<string, Command>> = {
  migrate: {
    summary: 'apply pending database migrations',
    async run(settings, databaseUrl) {
      const applied = await migrate(settings, databaseUrl);
      say(applied.length === 0 ? 'database schema is up to date' : `applied: ${applied.join(', ')}`);
      return 0;
    },
  },
};

const USAGE = `usage: npm run cli -- <command> [options]

commands:
${Object.entries(COMMANDS)
  .map(([name, command]) => `  ${name.padEnd(12)}${command.summary}`)
  .join('\n')}`;

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === 'help') {
    say(USAGE);
    return name === undefined ? 2 : 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) {
    say(`unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  const settings = loadSettings();
  const database = await resolveDatabase(settings, say);
  try {
    return await command.run(settings, database.url, args);
  } finally {
    await database.embedded?.stopIfUnused();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    say(error instanceof SettingsError ? error.message : `error: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
