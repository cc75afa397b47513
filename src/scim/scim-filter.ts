import { scimProblem } from './scim-error.js';

/*
 * SCIM filters (RFC 7644 §3.4.2.2) parsed into a tree, by a recursive-descent parser of our own:
 * the libraries looked at split value paths wrongly, backtrack exponentially or overflow the stack
 * on hostile input (docs/decisions.md, "SCIM libraries"). Every limit below is a 400 invalidFilter,
 * checked before the work it bounds: the length before the tokens, the depth and the number of
 * nodes while parsing, so no filter costs more than a few thousand steps.
 */

export const FILTER_LIMITS = { length: 4096, depth: 16, nodes: 200 } as const;

export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
export type FilterValue = string | number | boolean | null;

/** An attribute named by a filter or a PATCH path, lower-cased: `emails.value` is `{ attr: 'emails', sub: 'value' }`. */
export interface AttrPath {
  readonly attr: string;
  readonly sub?: string;
  /** The schema URN it was prefixed with, lower-cased, if any. */
  readonly urn?: string;
}

export type Filter =
  | { readonly kind: 'compare'; readonly path: AttrPath; readonly op: CompareOp; readonly value: FilterValue }
  | { readonly kind: 'present'; readonly path: AttrPath }
  | { readonly kind: 'and' | 'or'; readonly terms: readonly Filter[] }
  | { readonly kind: 'not'; readonly filter: Filter }
  /** `emails[type eq "work"]`, optionally followed by `.value eq "…"` (the form Entra ID sends). */
  | { readonly kind: 'valuePath'; readonly path: AttrPath; readonly filter: Filter; readonly then?: Filter };

const COMPARE_OPS = new Set<string>(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);

type Token =
  | { readonly type: 'word'; readonly text: string; readonly at: number }
  | { readonly type: 'string'; readonly value: string; readonly at: number }
  | { readonly type: 'number'; readonly value: number; readonly at: number }
  | { readonly type: '(' | ')' | '[' | ']'; readonly at: number };

function invalid(message: string): Error {
  return scimProblem('invalidFilter', message, 'filter');
}

// Attribute paths may carry a schema URN (`urn:ietf:params:scim:schemas:core:2.0:User:userName`).
const WORD = /[A-Za-z0-9_$:.-]+/y;
const NUMBER = /-?\d+(\.\d+)?([eE][+-]?\d+)?/y;
// Control characters are refused before tokenizing, so the class need not exclude them.
const STRING = /"(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < text.length) {
    const char = text[at] ?? '';
    if (char === ' ' || char === '\t') {
      at += 1;
      continue;
    }
    if (char === '(' || char === ')' || char === '[' || char === ']') {
      tokens.push({ type: char, at });
      at += 1;
      continue;
    }
    if (char === '"') {
      STRING.lastIndex = at;
      const match = STRING.exec(text);
      if (match === null) throw invalid(`The string at character ${at + 1} is not closed or holds a bad escape`);
      const value = JSON.parse(match[0]) as string;
      // An escaped NUL (\u0000) decodes to what PostgreSQL cannot hold in text.
      if (value.includes('\u0000')) throw invalid(`The string at character ${at + 1} holds a NUL character`);
      tokens.push({ type: 'string', value, at });
      at = STRING.lastIndex;
      continue;
    }
    NUMBER.lastIndex = at;
    const number = /[-\d]/.test(char) ? NUMBER.exec(text) : null;
    if (number !== null && !/[A-Za-z_$:]/.test(text[NUMBER.lastIndex] ?? '')) {
      tokens.push({ type: 'number', value: Number(number[0]), at });
      at = NUMBER.lastIndex;
      continue;
    }
    WORD.lastIndex = at;
    const word = WORD.exec(text);
    if (word === null) throw invalid(`Unexpected character ${JSON.stringify(char)} at character ${at + 1}`);
    tokens.push({ type: 'word', text: word[0], at });
    at = WORD.lastIndex;
  }
  return tokens;
}

/** `name.sub`, `urn:…:Resource:name.sub` → its parts, lower-cased; undefined when it is no attribute path. */
export function parseAttrPath(text: string): AttrPath | undefined {
  const lower = text.toLowerCase();
  let urn: string | undefined;
  let rest = lower;
  if (lower.startsWith('urn:')) {
    const cut = lower.lastIndexOf(':');
    urn = lower.slice(0, cut);
    rest = lower.slice(cut + 1);
  }
  const match = /^([a-z][a-z0-9_$-]*)(?:\.([a-z][a-z0-9_$-]*))?$/.exec(rest);
  if (match === null) return undefined;
  const [, attr = '', sub] = match;
  return { attr, ...(sub === undefined ? {} : { sub }), ...(urn === undefined ? {} : { urn }) };
}

class Parser {
  private position = 0;
  private nodes = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  parse(): Filter {
    const filter = this.or(0);
    const extra = this.tokens[this.position];
    if (extra !== undefined) throw invalid(`Unexpected ${describe(extra)} at character ${extra.at + 1}`);
    return filter;
  }

  private node<T extends Filter>(filter: T): T {
    this.nodes += 1;
    if (this.nodes > FILTER_LIMITS.nodes)
      throw invalid(`The filter has more than ${FILTER_LIMITS.nodes} terms: split it into several requests`);
    return filter;
  }

  private keyword(word: string): boolean {
    const token = this.tokens[this.position];
    if (token?.type === 'word' && token.text.toLowerCase() === word) {
      this.position += 1;
      return true;
    }
    return false;
  }

  private expect(type: '(' | ')' | '[' | ']'): void {
    const token = this.tokens[this.position];
    if (token?.type !== type)
      throw invalid(
        token === undefined
          ? `The filter ends where "${type}" was expected`
          : `Expected "${type}" at character ${token.at + 1}`,
      );
    this.position += 1;
  }

  // Chains are read in loops, not by recursion: 10 000 `or` terms cost no stack (the node limit refuses them).
  private or(depth: number): Filter {
    const terms = [this.and(depth)];
    while (this.keyword('or')) terms.push(this.and(depth));
    return terms.length === 1 ? (terms[0] as Filter) : this.node({ kind: 'or', terms });
  }

  private and(depth: number): Filter {
    const terms = [this.unary(depth)];
    while (this.keyword('and')) terms.push(this.unary(depth));
    return terms.length === 1 ? (terms[0] as Filter) : this.node({ kind: 'and', terms });
  }

  private unary(depth: number): Filter {
    if (depth >= FILTER_LIMITS.depth) throw invalid(`The filter is nested deeper than ${FILTER_LIMITS.depth} levels`);
    const token = this.tokens[this.position];
    if (token?.type === 'word' && token.text.toLowerCase() === 'not' && this.tokens[this.position + 1]?.type === '(') {
      this.position += 1;
      this.expect('(');
      const inner = this.or(depth + 1);
      this.expect(')');
      return this.node({ kind: 'not', filter: inner });
    }
    if (token?.type === '(') {
      this.position += 1;
      const inner = this.or(depth + 1);
      this.expect(')');
      return inner;
    }
    return this.attributeExpression(depth);
  }

  private attributeExpression(depth: number): Filter {
    const token = this.tokens[this.position];
    if (token?.type !== 'word')
      throw invalid(
        token === undefined
          ? 'The filter is empty or ends too soon'
          : `Expected an attribute at character ${token.at + 1}`,
      );
    this.position += 1;
    const path = parseAttrPath(token.text);
    if (path === undefined) throw invalid(`${JSON.stringify(token.text)} is not an attribute name`);
    if (this.tokens[this.position]?.type === '[') {
      if (path.sub !== undefined)
        throw invalid(`A value filter follows ${token.text}: name the attribute without a sub-attribute`);
      this.position += 1;
      const inner = this.or(depth + 1);
      this.expect(']');
      const next = this.tokens[this.position];
      // `emails[type eq "work"].value eq "…"`: the sub-attribute is read as the next word `.value`.
      if (next?.type === 'word' && next.text.startsWith('.')) {
        this.position += 1;
        const sub = parseAttrPath(next.text.slice(1));
        if (sub === undefined || sub.sub !== undefined || sub.urn !== undefined)
          throw invalid(`${JSON.stringify(next.text)} is not a sub-attribute`);
        const then = this.comparison({ attr: sub.attr });
        return this.node({ kind: 'valuePath', path, filter: inner, then });
      }
      return this.node({ kind: 'valuePath', path, filter: inner });
    }
    return this.comparison(path);
  }

  private comparison(path: AttrPath): Filter {
    const opToken = this.tokens[this.position];
    if (opToken?.type !== 'word')
      throw invalid(
        opToken === undefined
          ? 'The filter ends where an operator was expected'
          : `Expected an operator at character ${opToken.at + 1}`,
      );
    const op = opToken.text.toLowerCase();
    this.position += 1;
    if (op === 'pr') return this.node({ kind: 'present', path });
    if (!COMPARE_OPS.has(op))
      throw invalid(`${JSON.stringify(opToken.text)} is not an operator (eq, ne, co, sw, ew, gt, ge, lt, le, pr)`);
    const valueToken = this.tokens[this.position];
    if (valueToken === undefined) throw invalid(`The filter ends where the value of "${op}" was expected`);
    this.position += 1;
    return this.node({ kind: 'compare', path, op: op as CompareOp, value: literal(valueToken) });
  }
}

function literal(token: Token): FilterValue {
  if (token.type === 'string' || token.type === 'number') return token.value;
  if (token.type === 'word') {
    const word = token.text.toLowerCase();
    if (word === 'true') return true;
    if (word === 'false') return false;
    if (word === 'null') return null;
  }
  throw invalid(`Expected a value (a "string", a number, true, false or null) at character ${token.at + 1}`);
}

function describe(token: Token): string {
  if (token.type === 'word') return JSON.stringify(token.text);
  if (token.type === 'string') return 'a string';
  if (token.type === 'number') return 'a number';
  return `"${token.type}"`;
}

/** Parses a filter; throws 400 invalidFilter with a message that says where it went wrong. */
export function parseFilter(text: string): Filter {
  if (text.length > FILTER_LIMITS.length) throw invalid(`The filter is longer than ${FILTER_LIMITS.length} characters`);
  // eslint-disable-next-line no-control-regex -- exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(text)) throw invalid('The filter holds a control character');
  const tokens = tokenize(text);
  if (tokens.length === 0) throw invalid('The filter is empty');
  return new Parser(tokens).parse();
}
