import 'reflect-metadata';
import { loadSettings, SettingsError } from './config/settings.js';
import { resolveDatabase } from './database/database-url.js';
import { migrate } from './database/migrate.js';

/** Messages go to stderr so that stdout carries only the command's result (a token, an id). */
function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

const COMMANDS = ['migrate'];

const USAGE = `usage: npm run cli -- <command> [options]

commands:
  migrate     apply pending database migrations`;

async function main(argv: readonly string[]): Promise<number> {
  const [command] = argv;
  if (command === undefined || command === '--help' || command === 'help') {
    say(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (!COMMANDS.includes(command)) {
    say(`unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  const settings = loadSettings();
  const database = await resolveDatabase(settings, say);
  try {
    switch (command) {
      case 'migrate': {
        const applied = await migrate(settings, database.url);
        say(applied.length === 0 ? 'database schema is up to date' : `applied: ${applied.join(', ')}`);
        return 0;
      }
      default:
        say(`unknown command "${command}"\n\n${USAGE}`);
        return 2;
    }
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
