import type { LoggerService } from '@nestjs/common';
import pino, { type Logger as Pino } from 'pino';
import type Pretty from 'pino-pretty';
import { createRequire } from 'node:module';
import type { LogFormat, LogLevel } from '../config/settings.js';

/**
 * The process's logger (stdout): JSON for machines, or one readable line per event on a terminal
 * (`LOG_FORMAT`). Secrets never reach it: callers log ids and codes, not bodies.
 */
export function createPino(level: LogLevel, format: LogFormat = 'json'): Pino {
  const options = {
    level,
    base: { service: 'admin-api' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        '*.authorization',
        '*.password',
        '*.push_token',
        '*.temporary_pin',
        '*.token',
        '*.secret',
        '*.previous_secret',
        '*.secrets',
      ],
      remove: true,
    },
  };
  const readable = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  if (!readable) return pino(options);
  // In-process and synchronous (no worker thread): a line is on the terminal before the next one starts.
  // The start-up lines' fields are already in their message (or, for the migration names, only
  // noise on a terminal); JSON keeps them for machines.
  // Loaded only for a terminal: a server logging JSON never holds it (about 1 MB of heap).
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof Pretty;
  return pino(
    options,
    pretty({
      colorize: process.stdout.isTTY === true,
      sync: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,service,url,docs,database,read_replicas,cache,applied',
      singleLine: true,
    }),
  );
}

/** Nest's start-up chatter (a line per module and per route) is for debugging, not for every start. */
const START_UP_CONTEXTS = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
  'NestApplication',
]);

/** Routes Nest's own logging through pino, so every line is JSON with the same fields. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: Pino) {}

  private write(
    level: 'info' | 'error' | 'warn' | 'debug' | 'trace' | 'fatal',
    message: unknown,
    params: unknown[],
  ): void {
    const context = typeof params[params.length - 1] === 'string' ? (params[params.length - 1] as string) : undefined;
    if (typeof message === 'object' && message !== null) {
      this.pino[level]({ context, ...(message as Record<string, unknown>) });
    } else {
      const stack = level === 'error' && typeof params[0] === 'string' && params.length > 1 ? params[0] : undefined;
      this.pino[level]({ context, stack }, String(message));
    }
  }

  log(message: unknown, ...params: unknown[]): void {
    const context = params[params.length - 1];
    this.write(typeof context === 'string' && START_UP_CONTEXTS.has(context) ? 'debug' : 'info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }
}
