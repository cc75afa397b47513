// The house's layers, as one ESLint rule (`house/layers`): which part of src/ may import which.
//
// - The platform (src/platform/) is a strict stack. Each folder imports only the folders below it
//   in PLATFORM_LAYERS (and itself); no file lives directly in src/platform/; nothing in it imports
//   outside it (a feature, the access model), except the database's data source, which lists the
//   migrations (history, not a feature).
// - The access model (src/access-model/) imports only itself and the platform.
// Static imports, `export … from`, `import()` and `import('…')` types are all checked; an
// `import()` whose path is not a literal is refused in both, since it could name anything.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');
const MIGRATIONS = path.join(SRC, '..', 'migrations');

/** Bottom up: each folder and the folders it may import (besides itself). */
export const PLATFORM_LAYERS = {
  config: [],
  http: ['config'],
  database: ['config', 'http'],
  cache: ['config', 'http', 'database'],
  audit: ['config', 'http', 'database'],
  projections: ['config', 'http', 'database', 'cache'],
  auth: ['config', 'http', 'database', 'cache', 'projections'],
  jobs: ['config', 'http', 'database', 'cache', 'projections', 'auth'],
  idempotency: ['config', 'http', 'database', 'cache', 'projections', 'auth', 'jobs'],
};

/** Where a file sits: the platform's folder (or '' directly in it), the access model, a feature, or outside src/. */
function placeOf(file) {
  const rel = path.relative(SRC, file);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return { area: 'outside', file };
  const parts = rel.split(path.sep);
  if (parts[0] === 'platform') return { area: 'platform', folder: parts.length > 2 ? parts[1] : '' };
  if (parts[0] === 'access-model') return { area: 'access-model' };
  return { area: 'feature', folder: parts.length > 1 ? parts[0] : '' };
}

function refusal(from, to, target) {
  if (from.area === 'platform') {
    if (from.folder === '') return 'A file directly in src/platform/ has no layer: put it in the folder of its layer.';
    if (to.area === 'outside')
      return from.folder === 'database' && target.startsWith(MIGRATIONS + path.sep)
        ? undefined
        : 'The platform imports nothing outside src/platform/.';
    if (to.area !== 'platform')
      return `The platform imports no ${to.area === 'access-model' ? 'access model' : 'feature'}: register into the platform from above instead.`;
    if (to.folder === from.folder) return undefined;
    const below = PLATFORM_LAYERS[from.folder];
    if (below === undefined)
      return `src/platform/${from.folder}/ is not a layer of PLATFORM_LAYERS (eslint/layers.js).`;
    if (to.folder === '' || !below.includes(to.folder))
      return `src/platform/${from.folder}/ may import only ${below.join(', ') || 'nothing else'}: ${to.folder || 'a top-level file'} is not below it.`;
    return undefined;
  }
  if (from.area === 'access-model' && to.area !== 'access-model' && to.area !== 'platform' && to.area !== 'outside')
    return 'The access model imports only the platform: features reach it, not the other way round.';
  return undefined;
}

const PACKAGE = Symbol('a package');

export const layers = {
  meta: {
    type: 'problem',
    docs: { description: 'The platform is a strict stack; the access model sits on it; neither imports a feature.' },
    schema: [],
  },
  create(context) {
    const from = placeOf(context.filename);
    if (from.area !== 'platform' && from.area !== 'access-model') return {};
    const check = (node, spec) => {
      if (spec === PACKAGE) return;
      if (typeof spec !== 'string') {
        context.report({ node, message: 'An import() with a computed path is refused here: name the module.' });
        return;
      }
      let target;
      if (spec.startsWith('file:')) {
        try {
          target = fileURLToPath(spec);
        } catch {
          context.report({ node, message: 'A file: URL that names no file is refused here.' });
          return;
        }
      } else if (spec.startsWith('.') || spec.startsWith('/'))
        target = path.resolve(path.dirname(context.filename), spec);
      else return; // a package
      const message = refusal(from, placeOf(target), target);
      if (message !== undefined) context.report({ node, message });
    };
    // A template whose fixed start names a package (`@scope/${platform}`) is a package import.
    const literal = (source) =>
      source?.type === 'TemplateLiteral' &&
      source.expressions.length > 0 &&
      /^[@a-z]/.test(source.quasis[0].value.cooked)
        ? PACKAGE
        : literalText(source);
    const literalText = (source) =>
      source?.type === 'Literal'
        ? source.value
        : source?.type === 'TemplateLiteral' && source.expressions.length === 0
          ? source.quasis[0].value.cooked
          : null;
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => check(node.source, literal(node.source)),
      // require() (from createRequire or CommonJS) loads a module as surely as an import does.
      CallExpression: (node) => {
        const callee = node.callee;
        const named = (name) => callee.type === 'Identifier' && callee.name === name;
        if (
          named('require') ||
          (callee.type === 'MemberExpression' && callee.property.name === 'resolve' && callee.object.name === 'require')
        )
          check(node, node.arguments[0] === undefined ? null : literal(node.arguments[0]));
      },
      TSImportType: (node) => {
        const source = node.source ?? node.argument;
        const argument = source?.type === 'TSLiteralType' ? source.literal : source;
        check(node, literal(argument));
      },
      TSImportEqualsDeclaration: (node) =>
        node.moduleReference.type === 'TSExternalModuleReference' &&
        check(node, literal(node.moduleReference.expression)),
    };
  },
};

export default { rules: { layers } };
