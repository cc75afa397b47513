import { CliError, options, say, type Command } from './cli/command.js';
import { SEED_DEMO } from './cli/seed-demo.js';
import { TOKEN_COMMANDS } from './cli/token-commands.js';
import { loadDotEnv } from './platform/config/dotenv.js';
import { loadSettings, SettingsError } from './platform/config/settings.js';

/*
 * Only the command table is imported up front: the usage text, `--help` and option errors load no
 * TypeORM, pg or Nest (test/e2e/cli-tokens.spec.ts checks). Each command imports its own work in
 * its run, and the database is resolved (and an embedded one started) only for a valid command.
 */

/** Every command; the usage text and the dispatch are both derived from this table. */
const COMMANDS: Readonly<Record<string, Command>> = {
  migrate: {
    summary: 'apply pending database migrations (embedded or DATABASE_URL); safe while servers run',
    validate: (args) => void options(args, {}),
    async run(settings, databaseUrl) {
      const { migrate } = await import('./platform/database/migrate.js');
      const applied = await migrate(settings, databaseUrl);
      say(applied.length === 0 ? 'database schema is up to date' : `applied: ${applied.join(', ')}`);
      return 0;
    },
  },
  ...TOKEN_COMMANDS,
  'seed-demo': SEED_DEMO,
};

const USAGE = `usage: admin-api <command> [options]    (in the project: npx admin-api …, or npm run cli -- …)

commands:
${Object.entries(COMMANDS)
  .map(([name, command]) => `  ${name} ${command.usage ?? ''}\n      ${command.summary}`)
  .join('\n')}

admin-api <command> --help describes a command's options.`;

function commandHelp(name: string, command: Command): string {
  const options = command.options ?? [];
  const width = Math.max(0, ...options.map(([flag]) => flag.length));
  return [
    `usage: admin-api ${name} ${command.usage ?? ''}`.trimEnd(),
    '',
    command.summary,
    ...(options.length > 0
      ? ['', 'options:', ...options.map(([flag, meaning]) => `  ${flag.padEnd(width)}  ${meaning}`)]
      : []),
  ].join('\n');
}

/** Help goes to stdout (it is what was asked for); problems go to stderr. */
function printHelp(text: string): void {
  process.stdout.write(`${text}\n`);
}

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    const [topic] = args;
    if (topic === undefined) {
      printHelp(USAGE);
      return 0;
    }
    if (!Object.hasOwn(COMMANDS, topic)) {
      say(`unknown command "${topic}"\n\n${USAGE}`);
      return 2;
    }
    printHelp(commandHelp(topic, COMMANDS[topic] as Command));
    return 0;
  }
  if (name === undefined) {
    say(USAGE);
    return 2;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) {
    say(`unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  if (args.includes('--help') || args.includes('-h')) {
    printHelp(commandHelp(name, command));
    return 0;
  }
  try {
    await command.validate?.(args);
  } catch (error) {
    if (error instanceof CliError)
      throw new CliError(`${name}: ${error.message} (admin-api ${name} --help lists the options)`, error.exitCode);
    throw error;
  }
  loadDotEnv();
  const settings = loadSettings();
  // Before any decorated class (Nest's cache, the entities' metadata) is imported by a run.
  await import('reflect-metadata');
  const { resolveDatabase } = await import('./platform/database/database-url.js');
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
