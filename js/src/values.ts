/** Report values and the bytes hashed for them (Python's `str(value)` in UTF-8). */
import { utf8 } from "./bytes.js";
import { floatText } from "./float.js";
import { clip, isWellFormed } from "./text.js";

/**
 * A value to encode, in Python's types: `string`, `bigint` (an int of any
 * size), `number` (a float: `42` is hashed as `"42.0"`, as in Python) or
 * `boolean`. Domain lookup accepts a float with an integral value.
 */
export type Value = string | bigint | number | boolean;

/** A categorical domain value: a string or an integer. */
export type DomainValue = string | bigint;

/** Python's `str(value)`: decimal integers, `repr` floats, `True`/`False`. */
export function valueText(value: Value): string {
  switch (typeof value) {
    case "string":
      return value;
    case "bigint":
      return value.toString();
    case "number":
      return floatText(value);
    case "boolean":
      return value ? "True" : "False";
  }
  throw new TypeError(`unsupported value type: ${typeof value}`);
}

/** The bytes hashed for a value (Bloom filters, RAPPOR memo keys). */
export function valueBytes(value: Value): Uint8Array {
  if (typeof value === "string" && !isWellFormed(value)) {
    throw new RangeError(`value ${clip(value, 80, true)} has a lone surrogate: it is not text that UTF-8 can encode`);
  }
  return utf8(valueText(value));
}

/** Value → index of a categorical domain; integer domains accept decimal strings and integral floats. */
export class DomainIndex {
  private readonly index = new Map<string, number>();

  constructor(readonly domain: readonly DomainValue[]) {
    domain.forEach((v, i) => this.index.set(key(v), i));
    // the decimal text of an integer value also finds it (values read from files are strings)
    domain.forEach((v, i) => {
      if (typeof v === "bigint" && !this.index.has(key(v.toString()))) this.index.set(key(v.toString()), i);
    });
  }

  get size(): number {
    return this.domain.length;
  }

  indexOf(value: Value): number {
    let found: number | undefined;
    if (typeof value === "string" || typeof value === "bigint") found = this.index.get(key(value));
    else if (typeof value === "number" && Number.isInteger(value)) found = this.index.get(key(BigInt(value)));
    if (found === undefined) throw new RangeError(`value ${clip(String(value), 80, true)} is not in the domain`);
    return found;
  }
}

function key(v: DomainValue): string {
  return typeof v === "bigint" ? `i${v}` : `s${v}`;
}
