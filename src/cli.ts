import 'reflect-metadata';
import { CliError, say, type Command } from './cli/command.js';
import { SEED_DEMO } from './cli/seed-demo.js';
import { TOKEN_COMMANDS } from './cli/token-commands.js';
import { loadSettings, SettingsError } from './config/settings.js';
import { resolveDatabase } from './database/database-url.js';
import { migrate } from './database/migrate.js';

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
  ...TOKEN_COMMANDS,
  'seed-demo': SEED_DEMO,
};

const USAGE = `usage: npm run cli -- <command> [options]

commands:
${Object.entries(COMMANDS)
  .map(([name, command]) => `  ${name} ${command.usage ?? ''}\n      ${command.summary}`)
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
  command.validate?.(args);
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
    if (error instanceof SettingsError || error instanceof CliError) say(error.message);
    else say(`error: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(error instanceof CliError ? error.exitCode : 1);
  },
);
