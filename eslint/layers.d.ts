import type { Rule } from 'eslint';

export declare const PLATFORM_LAYERS: Readonly<Record<string, readonly string[]>>;
export declare const layers: Rule.RuleModule;
declare const plugin: { readonly rules: { readonly layers: Rule.RuleModule } };
export default plugin;
