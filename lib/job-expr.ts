// The job recipes' expression language (docs/dev/job-expression-language.md): `${path}` references
// in a step's params, and the boolean conditions of `when` and `branch[].when`. Pure: it reads a
// JSON context and nothing else. Conditions evaluate both sides of `&&` and `||`, as Lemonade's do.
import type { JsonValue as Json } from "./json.ts";

/** A reference that does not resolve, a type mismatch, or a syntax error: a client's mistake. */
export class JobExprError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JobExprError";
  }
}

const isObject = (v: Json): v is { [k: string]: Json } => typeof v === "object" && v !== null && !Array.isArray(v);

/** The value a dotted path selects: object keys, or numeric indexes into arrays. */
export function resolvePath(path: string, root: Json): Json {
  if (path === "") throw new JobExprError("empty reference path");
  let value: Json = root;
  for (const segment of path.split(".")) {
    if (Array.isArray(value) && /^\d+$/.test(segment) && Number(segment) < value.length) value = value[Number(segment)]!;
    else if (isObject(value) && Object.hasOwn(value, segment)) value = value[segment]!;
    else throw new JobExprError(`unknown reference '\${${path}}'`);
  }
  return value;
}

/** A value as it reads inside interpolated text: strings as they are, null as nothing, others as compact JSON. */
function stringify(v: Json): string {
  if (typeof v === "string") return v;
  if (v === null) return "";
  return JSON.stringify(v);
}

const WHOLE_REF = /^\$\{([^}]*)\}$/;

/** Resolves every `${path}` in the strings of `params` (recursively): a string that is exactly
 * one reference takes the value's JSON type; references inside text are interpolated as text. */
export function resolveRefs(params: Json, context: Json): Json {
  if (typeof params === "string") {
    const whole = WHOLE_REF.exec(params);
    if (whole) return resolvePath(whole[1]!, context);
    if (!params.includes("${")) return params;
    let out = "";
    let i = 0;
    while (i < params.length) {
      const start = params.indexOf("${", i);
      if (start < 0) {
        out += params.slice(i);
        break;
      }
      const end = params.indexOf("}", start + 2);
      if (end < 0) throw new JobExprError(`unterminated reference in '${params}'`);
      out += params.slice(i, start) + stringify(resolvePath(params.slice(start + 2, end), context));
      i = end + 1;
    }
    return out;
  }
  if (Array.isArray(params)) return params.map((p) => resolveRefs(p, context));
  if (isObject(params)) return Object.fromEntries(Object.entries(params).map(([k, v]) => [k, resolveRefs(v, context)]));
  return params;
}

type Token =
  | { kind: "num"; value: number }
  | { kind: "str"; value: string }
  | { kind: "ref"; path: string }
  | { kind: "kw"; value: true | false | null }
  | { kind: "op"; value: string };

const OPERATORS = ["||", "&&", "==", "!=", "<=", ">=", "<", ">", "!", "+", "-", "*", "/", "(", ")"];

/** Splits a condition into tokens; the syntax errors a creation check reports are found here. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (source.startsWith("${", i)) {
      const end = source.indexOf("}", i + 2);
      if (end < 0) throw new JobExprError(`unterminated reference at position ${i}`);
      tokens.push({ kind: "ref", path: source.slice(i + 2, end) });
      i = end + 1;
      continue;
    }
    if (c === "'" || c === '"') {
      let value = "";
      let j = i + 1;
      for (; j < source.length && source[j] !== c; j++) {
        if (source[j] === "\\") j++;
        if (j < source.length) value += source[j];
      }
      if (j >= source.length) throw new JobExprError(`unterminated string at position ${i}`);
      tokens.push({ kind: "str", value });
      i = j + 1;
      continue;
    }
    const num = /^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?/.exec(source.slice(i));
    if (num) {
      tokens.push({ kind: "num", value: Number(num[0]) });
      i += num[0].length;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(i));
    if (word) {
      const keywords: Record<string, true | false | null> = { true: true, false: false, null: null };
      if (!Object.hasOwn(keywords, word[0])) throw new JobExprError(`unknown identifier '${word[0]}' (only true, false and null are keywords)`);
      tokens.push({ kind: "kw", value: keywords[word[0]]! });
      i += word[0].length;
      continue;
    }
    const op = OPERATORS.find((o) => source.startsWith(o, i));
    if (!op) throw new JobExprError(`unexpected character '${c}' at position ${i}`);
    tokens.push({ kind: "op", value: op });
    i += op.length;
  }
  return tokens;
}

/** Whether a value counts as true: true, a non-zero number, a non-empty string, array or object. */
export function truthy(v: Json): boolean {
  if (typeof v === "boolean") return v;
  if (typeof v === "number") return v !== 0;
  if (typeof v === "string") return v.length > 0;
  if (Array.isArray(v)) return v.length > 0;
  if (isObject(v)) return Object.keys(v).length > 0;
  return false;
}

function deepEqual(a: Json, b: Json): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]!));
  }
  if (isObject(a) || isObject(b)) {
    if (!isObject(a) || !isObject(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k]!, b[k]!));
  }
  return a === b;
}

const typeName = (v: Json) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

function number(v: Json, op: string): number {
  if (typeof v !== "number") throw new JobExprError(`'${op}' needs numbers, got ${typeName(v)}`);
  return v;
}

/** A recursive-descent parser that evaluates as it parses, one grammar rule per method. Without
 * a context it only checks the syntax: references are not looked up and nothing is computed. */
class Parser {
  private pos = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly context: Json | undefined,
  ) {}

  condition(): Json {
    if (this.tokens.length === 0) return true;
    const value = this.or();
    if (this.pos < this.tokens.length) throw new JobExprError(`unexpected trailing ${describe(this.tokens[this.pos]!)}`);
    return value;
  }

  private peekOp(...ops: string[]): string | undefined {
    const t = this.tokens[this.pos];
    return t?.kind === "op" && ops.includes(t.value) ? t.value : undefined;
  }

  private checking(): boolean {
    return this.context === undefined;
  }

  private or(): Json {
    let left = this.and();
    while (this.peekOp("||")) {
      this.pos++;
      const right = this.and();
      left = this.checking() ? null : truthy(left) || truthy(right);
    }
    return left;
  }

  private and(): Json {
    let left = this.not();
    while (this.peekOp("&&")) {
      this.pos++;
      const right = this.not();
      left = this.checking() ? null : truthy(left) && truthy(right);
    }
    return left;
  }

  private not(): Json {
    if (this.peekOp("!")) {
      this.pos++;
      const v = this.not();
      return this.checking() ? null : !truthy(v);
    }
    return this.comparison();
  }

  private comparison(): Json {
    const left = this.additive();
    const op = this.peekOp("==", "!=", "<", "<=", ">", ">=");
    if (!op) return left;
    this.pos++;
    const right = this.additive();
    if (this.peekOp("==", "!=", "<", "<=", ">", ">=")) throw new JobExprError("comparisons do not chain; group them with && or parentheses");
    if (this.checking()) return null;
    if (op === "==") return deepEqual(left, right);
    if (op === "!=") return !deepEqual(left, right);
    const comparable = (typeof left === "number" && typeof right === "number") || (typeof left === "string" && typeof right === "string");
    if (!comparable) throw new JobExprError(`'${op}' compares two numbers or two strings, got ${typeName(left)} and ${typeName(right)}`);
    const l = left as number | string;
    const r = right as number | string;
    return op === "<" ? l < r : op === "<=" ? l <= r : op === ">" ? l > r : l >= r;
  }

  private additive(): Json {
    let left = this.multiplicative();
    for (let op = this.peekOp("+", "-"); op; op = this.peekOp("+", "-")) {
      this.pos++;
      const right = this.multiplicative();
      if (!this.checking()) left = op === "+" ? number(left, op) + number(right, op) : number(left, op) - number(right, op);
    }
    return left;
  }

  private multiplicative(): Json {
    let left = this.unary();
    for (let op = this.peekOp("*", "/"); op; op = this.peekOp("*", "/")) {
      this.pos++;
      const right = this.unary();
      if (this.checking()) continue;
      if (op === "*") left = number(left, op) * number(right, op);
      else {
        if (number(right, op) === 0) throw new JobExprError("division by zero");
        left = number(left, op) / (right as number);
      }
    }
    return left;
  }

  private unary(): Json {
    if (this.peekOp("-")) {
      this.pos++;
      const v = this.unary();
      return this.checking() ? null : -number(v, "-");
    }
    return this.primary();
  }

  private primary(): Json {
    const t = this.tokens[this.pos];
    if (!t) throw new JobExprError("unexpected end of expression");
    this.pos++;
    switch (t.kind) {
      case "num":
      case "str":
      case "kw":
        return t.value;
      case "ref":
        return this.checking() ? null : resolvePath(t.path, this.context!);
      case "op": {
        if (t.value !== "(") break;
        const v = this.or();
        if (!this.peekOp(")")) throw new JobExprError("missing ')'");
        this.pos++;
        return v;
      }
    }
    throw new JobExprError(`unexpected ${describe(t)}`);
  }
}

function describe(t: Token): string {
  if (t.kind === "op") return `'${t.value}'`;
  if (t.kind === "ref") return `reference '\${${t.path}}'`;
  return `literal ${JSON.stringify(t.value)}`;
}

/** A condition's truth against the context; an empty condition is true. */
export function evalCondition(source: string, context: Json): boolean {
  return truthy(new Parser(tokenize(source), context).condition());
}

/** The syntax error in a condition, or null: what job creation checks (paths are checked at run time). */
export function syntaxError(source: string): string | null {
  try {
    new Parser(tokenize(source), undefined).condition();
    return null;
  } catch (err) {
    if (err instanceof JobExprError) return err.message;
    throw err;
  }
}
