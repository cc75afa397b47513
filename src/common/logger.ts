import type { LoggerService } from '@nestjs/common';
import pino, { type Logger as Pino } from 'pino';
import type { LogLevel } from '../config/settings.js';

/** The process's JSON logger (stdout). Secrets never reach it: callers log ids and codes, not bodies. */
export function createPino(level: LogLevel): Pino {
  return pino({
    level,
    base: { service: 'admin-api' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['*.authorization', '*.password', '*.push_token', '*.temporary_pin', '*.token'], remove: true },
  });
}

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
    this.write('info', message, params);
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
