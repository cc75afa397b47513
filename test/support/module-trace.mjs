// Loaded with `node --import` (through NODE_OPTIONS): when the process exits, writes every module
// it loaded, imported or required, as resolved URLs one a line, to MODULE_TRACE_FILE.
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const loaded = new Set();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    loaded.add(resolved.url);
    return resolved;
  },
});
process.on('exit', () => writeFileSync(process.env.MODULE_TRACE_FILE ?? 'module-trace.txt', [...loaded].join('\n')));
