import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';

/** What a write sees inside its transaction. */
export interface Tx {
  readonly db: EntityManager;
  /** Runs after COMMIT (cache rebuilds); never inside the transaction, never after a rollback. */
  afterCommit(task: () => Promise<void>): void;
}

/** One write = one transaction with its audit event; cache work is deferred until it committed. */
@Injectable()
export class UnitOfWork {
  constructor(private readonly dataSource: DataSource) {}

  async run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    const tasks: (() => Promise<void>)[] = [];
    const result = await this.dataSource.transaction((db) => work({ db, afterCommit: (task) => tasks.push(task) }));
    for (const task of tasks) await task();
    return result;
  }

  /** The manager for reads outside a transaction. */
  get reader(): EntityManager {
    return this.dataSource.manager;
  }
}
