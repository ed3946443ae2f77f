/**
 * Multi-attribute records (mechanism "multi-attribute", `ldp/specs/multiattr.py`): one report per record,
 * each reported attribute by its own mechanism's encoder, byte for byte as the Python client.
 */
import type { Encoder, EncoderOptions } from "./encoder.js";
import type { JsonObject } from "./json.js";
import { NumericEncoder, toDouble, twoPointTable } from "./numeric.js";
import type { ByteSource } from "./random.js";
import { bitReader, uniform } from "./reportbits.js";
import type { ExtraField, Report } from "./report.js";
import { type Spec, checkedSpec, loadSpec } from "./spec.js";
import { NUMERIC_TABLES } from "./specfields.js";
import { UnaryEncoder } from "./unary.js";
import { fail } from "./text.js";
import { DomainIndex, type DomainValue, type Value } from "./values.js";

/** The fields of a part's report, in the order of its JSON form (Python's schema order); a numeric output stays a float. */
function partFields(report: Report): [string, ExtraField][] {
  const out: [string, ExtraField][] = [];
  if (report.cohort !== undefined) out.push(["cohort", report.cohort]);
  if (report.seed !== undefined) out.push(["seed", report.seed]);
  if (report.value !== undefined) out.push(["value", typeof report.value === "number" ? { float: report.value } : report.value]);
  for (const [name, field] of report.extra ?? []) out.push([name, field]);
  if (report.bits !== undefined) out.push(["bits", report.bits]);
  return out;
}

/** A numeric attribute's value: a finite number (text is parsed first, as in Python's `check_numeric_value`). */
function recordNumber(value: Value): number {
  if (typeof value !== "number" && typeof value !== "bigint") {
    fail(`numeric value must be a number, got ${typeof value === "string" ? `the text ${JSON.stringify(value.slice(0, 80))} (parse text first)` : typeof value}`);
  }
  return toDouble(value);
}

/** True for a mechanism whose sampling table is the server's (`GET /v1/tasks/{task}/tables`), never rebuilt here: a grid table (generated `NUMERIC_TABLES`). */
function serverTable(mechanism: string): boolean {
  const kind = NUMERIC_TABLES[mechanism];
  return kind !== undefined && kind !== "two-point";
}

/** The RS+FD methods over unary encoding (every attribute's bits in every report). */
const RSFD_UNARY = new Set(["rsfd-sue-z", "rsfd-sue-r", "rsfd-oue-z", "rsfd-oue-r"]);

/** The encoder of numeric attribute `name`: `NumericEncoder` with its table (two-point: the spec's own). */
function numericPart(name: string, part: Spec, source: ByteSource, options: EncoderOptions, parts: (spec: Spec) => Encoder): Encoder {
  if (NUMERIC_TABLES[part.mechanism] === "two-point") return new NumericEncoder(part, twoPointTable(part), source);
  if (!serverTable(part.mechanism)) return parts(part); // a numeric mechanism whose spec holds its probabilities (1BitMean)
  const table = options.tables?.[name];
  if (table === undefined) {
    fail(`multi-attribute: attribute ${JSON.stringify(name)} (${part.mechanism}) needs the server's sampling table: pass tables: {${JSON.stringify(name)}: ...} from GET /v1/tasks/{task}/tables`);
  }
  if (table.digest === undefined) fail(`multi-attribute: attribute ${JSON.stringify(name)}: its table has no digest`);
  try {
    return new NumericEncoder(part, table, source);
  } catch (error) {
    return fail(`multi-attribute: attribute ${JSON.stringify(name)}: ${(error as Error).message}`);
  }
}

/**
 * A record's report: `smp` draws k of the d attributes (a partial Fisher–Yates shuffle, one
 * uniform(d − t) per draw, on the CSPRNG's bits) and sends their bits `sampled` and their reports; `spl` reports every
 * attribute; `rsfd-grr` draws the attribute reported by GRR and gives every other a uniform fake value;
 * `rsfd-{sue,oue}-z` report the drawn attribute by UE and every other as the zero vector perturbed,
 * `-r` as the UE report of a uniform value (one uniform(k_j) each, in attribute order).
 * Every value of the record is checked, sampled or not. A numeric attribute is reported by
 * `NumericEncoder`: Duchi's and stochastic rounding's tables follow from the spec; a grid mechanism's
 * (piecewise, hybrid, Laplace, Gaussian) is the server's, given as `options.tables[name]` (the
 * `attributes` of `GET /v1/tasks/{task}/tables`) and checked against its digest and the attribute's ε.
 *
 * @mechanisms multi-attribute
 */
export class MultiAttributeEncoder implements Encoder {
  private readonly names: string[];
  /** Per attribute: its domain (categorical), or null (a number). */
  private readonly indexes: (DomainIndex | null)[];
  private readonly encoders: Encoder[];
  private readonly method: string;
  private readonly sample: number;

  static create(spec: Spec, source: ByteSource, options: EncoderOptions, parts: (spec: Spec) => Encoder): MultiAttributeEncoder {
    return new MultiAttributeEncoder(spec, source, options, parts);
  }

  private constructor(readonly spec: Spec, private readonly source: ByteSource, options: EncoderOptions, parts: (spec: Spec) => Encoder) {
    checkedSpec(spec);
    const attributes = spec.fields.attributes as JsonObject[];
    this.names = attributes.map((a) => String(a.name));
    this.method = String(spec.fields.method);
    this.sample = Number(spec.fields.sample as bigint);
    this.indexes = [];
    this.encoders = [];
    for (const attribute of attributes) {
      const { name, ...fields } = attribute;
      const part = loadSpec(fields);
      const categorical = Array.isArray(fields.domain);
      this.indexes.push(categorical ? new DomainIndex(fields.domain as DomainValue[]) : null);
      this.encoders.push(categorical ? parts(part) : numericPart(String(name), part, source, options, parts));
    }
    for (const name of Object.keys(options.tables ?? {})) {
      const j = this.names.indexOf(name);
      if (j < 0 || !serverTable(String(attributes[j].mechanism))) {
        fail(`multi-attribute: a table is given for ${JSON.stringify(name)}, which is not an attribute of a grid mechanism (${this.names.join(", ")})`);
      }
    }
  }

  /** The record as its values in attribute order: an object by attribute name, or an array of d values. */
  private record(value: Value): Value[] {
    const given = value as unknown;
    let record: Value[];
    if (Array.isArray(given)) {
      record = given as Value[];
      if (record.length !== this.names.length) fail(`record has ${record.length} values, the spec ${this.names.length} attributes`);
    } else if (given !== null && typeof given === "object" && !(given instanceof Uint8Array)) {
      const object = given as Record<string, Value>;
      const missing = this.names.find((n) => !(n in object));
      if (missing !== undefined) fail(`record has no ${JSON.stringify(missing)} (the spec's attributes: ${this.names.join(", ")})`);
      record = this.names.map((n) => object[n]);
    } else {
      return fail(`a multi-attribute input is a record (an object of ${this.names.join(", ")}), got ${typeof given}`);
    }
    record.forEach((v, j) => {
      try {
        const index = this.indexes[j];
        if (index === null) recordNumber(v);
        else index.indexOf(v);
      } catch (error) {
        fail(`attribute ${JSON.stringify(this.names[j])}: ${(error as Error).message}`);
      }
    });
    return record;
  }

  private sampled(): number[] {
    const d = this.names.length;
    const order = [...Array(d).keys()];
    for (let t = 0; t < this.sample; t++) {
      const pick = d - t > 1 ? t + uniform(d - t, bitReader(this.source)) : t;
      [order[t], order[pick]] = [order[pick], order[t]];
    }
    return order.slice(0, this.sample).sort((a, b) => a - b);
  }

  encode(value: Value): Report {
    const record = this.record(value);
    const d = this.names.length;
    const extra: [string, ExtraField][] = [];
    if (this.method === "rsfd-grr") {
      const chosen = uniform(d, bitReader(this.source));
      for (let j = 0; j < d; j++) {
        const domain = this.indexes[j]!.domain; // rsfd-grr: every attribute is categorical (GRR)
        const reported = j === chosen ? this.encoders[j].encode(record[j]).value! : domain[uniform(domain.length, bitReader(this.source))];
        extra.push([`a${j}_value`, reported]);
      }
      return { spec: this.spec.fingerprint, extra };
    }
    if (RSFD_UNARY.has(this.method)) {
      const chosen = uniform(d, bitReader(this.source));
      for (let j = 0; j < d; j++) {
        const encoder = this.encoders[j];
        const index = this.indexes[j]!; // RS+FD: every attribute is categorical (SUE or OUE)
        if (!(encoder instanceof UnaryEncoder)) return fail(`multi-attribute: ${this.method} takes unary-encoding attributes`);
        let bits: Uint8Array;
        if (j === chosen) bits = encoder.perturb(index.indexOf(record[j]));
        else if (this.method.endsWith("-z")) bits = encoder.perturb(null);
        else bits = encoder.perturb(uniform(index.size, bitReader(this.source)));
        extra.push([`a${j}_bits`, bits]);
      }
      return { spec: this.spec.fingerprint, extra };
    }
    const sampled = this.method === "spl" ? [...Array(d).keys()] : this.sampled();
    if (this.method === "smp") {
      const bits = new Uint8Array(Math.ceil(d / 8));
      for (const j of sampled) bits[j >> 3] |= 0x80 >> (j & 7);
      extra.push(["sampled", bits]);
    }
    for (const j of sampled) {
      for (const [name, field] of partFields(this.encoders[j].encode(record[j]))) extra.push([`a${j}_${name}`, field]);
    }
    return { spec: this.spec.fingerprint, extra };
  }
}
