import { Global, Module, type DynamicModule } from '@nestjs/common';
import { SETTINGS, type Settings } from './settings.js';

/** Makes the already-validated settings injectable everywhere (`@Inject(SETTINGS)`). */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(settings: Settings): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: SETTINGS, useValue: settings }], exports: [SETTINGS] };
  }
}
