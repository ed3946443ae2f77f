/**
 * JSON with Python's number model: integers are `bigint` (any size, never
 * rounded through a double), numbers with a fraction or exponent are `number`
 * (Python floats). Writing follows `json.dumps(..., ensure_ascii=False)`.
 */
import { floatText } from "./float.js";

export type Json = null | boolean | string | bigint | number | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

/** Parse JSON text; integers become bigint, other numbers double. */
export function parseJson(text: string): Json {
  const parser = new Parser(text);
  parser.space();
  const value = parser.value();
  parser.space();
  if (parser.pos !== text.length) parser.fail("trailing characters");
  return value;
}

class Parser {
  pos = 0;
  constructor(private readonly text: string) {}

  fail(why: string): never {
    throw new SyntaxError(`JSON: ${why} at position ${this.pos}`);
  }

  space(): void {
    while (/[ \t\n\r]/.test(this.text[this.pos] ?? "")) this.pos++;
  }

  value(): Json {
    const c = this.text[this.pos];
    if (c === "{") return this.object();
    if (c === "[") return this.array();
    if (c === '"') return this.string();
    if (c === "-" || (c >= "0" && c <= "9")) return this.number();
    for (const [word, value] of [["true", true], ["false", false], ["null", null]] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return value;
      }
    }
    return this.fail("unexpected character");
  }

  object(): JsonObject {
    const out: JsonObject = Object.create(null);
    this.pos++;
    this.space();
    if (this.text[this.pos] === "}") {
      this.pos++;
      return out;
    }
    for (;;) {
      this.space();
      if (this.text[this.pos] !== '"') this.fail("expected a key");
      const key = this.string();
      this.space();
      if (this.text[this.pos++] !== ":") this.fail("expected ':'");
      this.space();
      out[key] = this.value();
      this.space();
      const c = this.text[this.pos++];
      if (c === "}") return out;
      if (c !== ",") this.fail("expected ',' or '}'");
    }
  }

  array(): Json[] {
    const out: Json[] = [];
    this.pos++;
    this.space();
    if (this.text[this.pos] === "]") {
      this.pos++;
      return out;
    }
    for (;;) {
      this.space();
      out.push(this.value());
      this.space();
      const c = this.text[this.pos++];
      if (c === "]") return out;
      if (c !== ",") this.fail("expected ',' or ']'");
    }
  }

  string(): string {
    const match = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(this.text.slice(this.pos));
    if (!match) return this.fail("bad string");
    this.pos += match[0].length;
    return JSON.parse(match[0]) as string; // the built-in reader decodes escapes exactly
  }

  number(): bigint | number {
    const match = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.text.slice(this.pos));
    if (!match) return this.fail("bad number");
    this.pos += match[0].length;
    return match[1] || match[2] ? Number(match[0]) : BigInt(match[0]);
  }
}

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\b": "\\b",
  "\f": "\\f",
};

/**
 * A JSON string as Python writes it with ensure_ascii=False: `"`, `\` and the
 * C0 controls escaped; with `lineSeparators`, also U+0085, U+2028, U+2029
 * (report lines), never in spec JSON.
 */
export function jsonString(text: string, lineSeparators = false): string {
  const pattern = lineSeparators ? /["\\\u0000-\u001f\u0085\u2028\u2029]/g : /["\\\u0000-\u001f]/g;
  if (!pattern.test(text)) return `"${text}"`; // nothing to escape (the common case)
  const body = text.replace(
    pattern,
    (c) => SHORT_ESCAPES[c] ?? "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"),
  );
  return `"${body}"`;
}

/** Compact JSON (`,` and `:`), keys sorted by code point when `sortKeys`; floats as Python writes them. */
export function dumpJson(value: Json, sortKeys = true, lineSeparators = false): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return jsonString(value, lineSeparators);
    case "bigint":
      return value.toString();
    case "number":
      return floatText(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => dumpJson(v, sortKeys, lineSeparators)).join(",")}]`;
  const keys = Object.keys(value);
  if (sortKeys) keys.sort(byCodePoint);
  const items = keys.map((k) => `${jsonString(k, lineSeparators)}:${dumpJson(value[k], sortKeys, lineSeparators)}`);
  return `{${items.join(",")}}`;
}

function byCodePoint(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}
