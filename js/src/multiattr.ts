/**
 * Multi-attribute records (mechanism "multi-attribute", `ldp/specs/multiattr.py`): one report per record,
 * each reported attribute by its own mechanism's encoder, byte for byte as the Python client.
 */
import type { Encoder, EncoderOptions } from "./encoder.js";
import type { JsonObject } from "./json.js";
import { type ByteSource, randbelow } from "./random.js";
import type { Report } from "./report.js";
import { type Spec, checkedSpec, loadSpec } from "./spec.js";
import { fail } from "./text.js";
import { DomainIndex, type DomainValue, type Value } from "./values.js";

/** The fields of a part's report, in the order of its JSON form (Python's schema order). */
function partFields(report: Report): [string, number | bigint | string | Uint8Array][] {
  const out: [string, number | bigint | string | Uint8Array][] = [];
  if (report.cohort !== undefined) out.push(["cohort", report.cohort]);
  if (report.seed !== undefined) out.push(["seed", report.seed]);
  if (report.value !== undefined) out.push(["value", report.value]);
  for (const [name, field] of report.extra ?? []) out.push([name, field]);
  if (report.bits !== undefined) out.push(["bits", report.bits]);
  return out;
}

/**
 * A record's report: `smp` draws k of the d attributes (a partial Fisher–Yates shuffle, one
 * randbelow(d − t) per draw) and sends their bits `sampled` and their reports; `spl` reports every
 * attribute; `rsfd-grr` draws the attribute reported by GRR and gives every other a uniform fake value.
 * Every value of the record is checked, sampled or not. Attributes of a numeric mechanism need the
 * server's table (`NumericEncoder`): not supported here yet.
 *
 * @mechanisms multi-attribute
 */
export class MultiAttributeEncoder implements Encoder {
  private readonly names: string[];
  private readonly indexes: DomainIndex[];
  private readonly encoders: Encoder[];
  private readonly method: string;
  private readonly sample: number;

  static create(spec: Spec, source: ByteSource, options: EncoderOptions, parts: (spec: Spec) => Encoder): MultiAttributeEncoder {
    return new MultiAttributeEncoder(spec, source, options, parts);
  }

  private constructor(readonly spec: Spec, private readonly source: ByteSource, _options: EncoderOptions, parts: (spec: Spec) => Encoder) {
    checkedSpec(spec);
    const attributes = spec.fields.attributes as JsonObject[];
    this.names = attributes.map((a) => String(a.name));
    this.method = String(spec.fields.method);
    this.sample = Number(spec.fields.sample as bigint);
    this.indexes = [];
    this.encoders = [];
    for (const attribute of attributes) {
      const { name, ...fields } = attribute;
      if (!Array.isArray(fields.domain)) {
        fail(`multi-attribute: attribute ${String(name)} (${String(fields.mechanism)}) is numeric: this client has no record encoder for it yet`);
      }
      const part = loadSpec(fields);
      this.indexes.push(new DomainIndex(fields.domain as DomainValue[]));
      this.encoders.push(parts(part));
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
        this.indexes[j].indexOf(v);
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
      const pick = d - t > 1 ? t + Number(randbelow(BigInt(d - t), this.source)) : t;
      [order[t], order[pick]] = [order[pick], order[t]];
    }
    return order.slice(0, this.sample).sort((a, b) => a - b);
  }

  encode(value: Value): Report {
    const record = this.record(value);
    const d = this.names.length;
    const extra: [string, number | bigint | string | Uint8Array][] = [];
    if (this.method === "rsfd-grr") {
      const chosen = Number(randbelow(BigInt(d), this.source));
      for (let j = 0; j < d; j++) {
        const domain = this.indexes[j].domain;
        const reported = j === chosen ? this.encoders[j].encode(record[j]).value! : domain[Number(randbelow(BigInt(domain.length), this.source))];
        extra.push([`a${j}_value`, reported]);
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
