import { Global, Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Settings } from '../config/settings.js';
import { dataSourceOptions } from './data-source.js';
import { DATABASE_URL, WRITE_TURNS } from './database.tokens.js';
import { ReadReplicas } from './read-replicas.js';
import { UnitOfWork } from './unit-of-work.js';
import { WriteTurns } from './write-turns.js';

@Global()
@Module({})
export class DatabaseModule {
  static forRoot(settings: Settings, databaseUrl: string): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => ({ ...dataSourceOptions(settings, databaseUrl), retryAttempts: 2, retryDelay: 1000 }),
        }),
      ],
      providers: [
        UnitOfWork,
        { provide: DATABASE_URL, useValue: databaseUrl },
        { provide: WRITE_TURNS, useValue: new WriteTurns(settings.dbWriteConcurrency, settings.dbWriteWaitMs) },
        {
          provide: ReadReplicas,
          inject: [DataSource],
          useFactory: (primary: DataSource) => new ReadReplicas(primary, settings),
        },
      ],
      exports: [UnitOfWork, ReadReplicas, DATABASE_URL, WRITE_TURNS],
    };
  }
}
