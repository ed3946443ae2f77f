/** Reports: the JSON Lines form and the binary form, byte for byte as the Python library writes them. */
import { bigIntToBytesBE, concatBytes, fromHex, toBase64, utf8 } from "./bytes.js";
import { dumpJson, jsonString } from "./json.js";

/** A declared field holding a float (a record's numeric attribute value): written as the `value` field writes a number. */
export interface FloatField {
  readonly float: number;
}

/** A declared field's value: an integer (number or bigint), text, bytes, or a float. */
export type ExtraField = number | bigint | string | Uint8Array | FloatField;

/** One report. `value` is a domain value or bucket (string, bigint) or a numeric output (number: a float). */
export interface Report {
  /** The spec's fingerprint (16 lowercase hex digits). */
  spec: string;
  cohort?: number;
  seed?: bigint;
  value?: string | bigint | number;
  /**
   * Fields a spec's report schema declares, in schema order: integers (CMS's row, HCMS's row, column and
   * bit), and a composite spec's parts' fields (a record's `sampled` bits, its attributes' values,
   * seeds and bit vectors, written as their own fields are; a float as a `FloatField`).
   */
  extra?: ReadonlyArray<readonly [string, ExtraField]>;
  bits?: Uint8Array;
  client?: string;
  group?: string;
}

/** 1, or 2 when the report carries a group. */
export function reportVersion(report: Report): number {
  return report.group === undefined ? 1 : 2;
}

/** The JSON line: keys v, spec, cohort, seed, value, the declared fields, bits, client, group (absent ones omitted). */
export function reportToJson(report: Report): string {
  const parts = [`"v":${reportVersion(report)}`, `"spec":${jsonString(report.spec, true)}`];
  if (report.cohort !== undefined) parts.push(`"cohort":${report.cohort}`);
  if (report.seed !== undefined) parts.push(`"seed":${report.seed}`);
  if (report.value !== undefined) parts.push(`"value":${dumpJson(report.value, false, true)}`);
  for (const [name, field] of report.extra ?? []) parts.push(`${jsonString(name, true)}:${extraJson(field)}`);
  if (report.bits !== undefined) parts.push(`"bits":"${toBase64(report.bits)}"`);
  if (report.client !== undefined) parts.push(`"client":${jsonString(report.client, true)}`);
  if (report.group !== undefined) parts.push(`"group":${jsonString(report.group, true)}`);
  return `{${parts.join(",")}}`;
}

/** A declared field's JSON: an integer as is, text and floats as the value field writes them, bytes as base64 text. */
function extraJson(field: ExtraField): string {
  if (field instanceof Uint8Array) return `"${toBase64(field)}"`;
  if (typeof field === "string") return dumpJson(field, false, true);
  if (typeof field === "object") return dumpJson(field.float, false, true);
  return `${field}`;
}

function uint(x: number | bigint, bytes: number): Uint8Array {
  return bigIntToBytesBE(BigInt(x), bytes);
}

/** 2-byte length, then the UTF-8 text. */
function text(value: string): Uint8Array {
  const raw = utf8(value);
  if (raw.length > 0xffff) throw new RangeError("report text longer than 65535 bytes");
  return concatBytes(uint(raw.length, 2), raw);
}

function valueField(value: string | bigint | number): Uint8Array {
  if (typeof value === "bigint") {
    if (value < -(1n << 63n) || value >= 1n << 63n) throw new RangeError("report integer outside int64");
    return concatBytes(Uint8Array.of(0), uint(BigInt.asUintN(64, value), 8));
  }
  if (typeof value === "number") {
    const out = new Uint8Array(9);
    out[0] = 1;
    new DataView(out.buffer).setFloat64(1, value, false);
    return out;
  }
  return concatBytes(Uint8Array.of(2), text(value));
}

/** The binary form: v, presence mask, fingerprint (8 bytes), then the present fields, big-endian. */
export function reportToBinary(report: Report): Uint8Array {
  if (report.extra?.length) throw new RangeError(`report field ${report.extra[0][0]} has no binary form`);
  let mask = 0;
  const body: Uint8Array[] = [];
  const add = (bit: number, bytes: Uint8Array) => {
    mask |= bit;
    body.push(bytes);
  };
  if (report.value !== undefined) add(1, valueField(report.value));
  if (report.seed !== undefined) add(2, uint(report.seed, 8));
  if (report.bits !== undefined) {
    if (report.bits.length > 0xffff) throw new RangeError("report bits longer than 65535 bytes");
    add(4, concatBytes(uint(report.bits.length, 2), report.bits));
  }
  if (report.cohort !== undefined) add(8, uint(report.cohort, 4));
  if (report.client !== undefined) add(16, text(report.client));
  if (report.group !== undefined) add(32, text(report.group));
  return concatBytes(Uint8Array.of(reportVersion(report), mask), fromHex(report.spec), ...body);
}
