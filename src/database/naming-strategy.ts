import { DefaultNamingStrategy, type NamingStrategyInterface } from 'typeorm';

/** Entity properties are already snake_case (they are the contract's field names); tables are too. */
export class SnakeNamingStrategy extends DefaultNamingStrategy implements NamingStrategyInterface {
  override tableName(className: string, customName: string | undefined): string {
    return customName ?? className.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
  }
}
