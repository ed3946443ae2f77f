/**
 * Mechanism specs: reading spec JSON, its canonical form and fingerprint,
 * for the mechanisms of a catalog (`catalog.ts`; `spec.ts` binds these
 * functions to every mechanism's, for the main entry point; an entry point
 * that loads some families only passes its own, and bundles no other
 * family's tables).
 *
 * The client never calibrates probabilities from ε (that uses libm's `exp`;
 * one ulp changes the fingerprint): it reads the server's spec, with its
 * exact fractions, and checks the fingerprint. Every spec is checked as the
 * Python specs check themselves (`claim.ts`): its probabilities must give
 * the ε it states, so the budget charges what a report really costs.
 */
import { sha256 } from "./hash/sha256.js";
import { toHex, utf8 } from "./bytes.js";
import { type Fraction, fractionOfFloat, fractionText, parseFraction } from "./fraction.js";
import { type Catalog, type FieldKind, catalogComplete, catalogPrivacy, entryOf } from "./catalog.js";
import { MECHANISMS } from "./catalog/names.js";
import { checkClaimFacts } from "./claimcheck.js";
import { type Json, type JsonObject, dumpJson, parseJson } from "./json.js";
import { domainOf, int, prob } from "./privacyfields.js";
import { clip, fail } from "./text.js";
import type { DomainValue } from "./values.js";

export const SPEC_FORMAT = 1n;

/** A loaded spec: its canonical fields, canonical JSON and fingerprint. */
export interface Spec {
  readonly mechanism: string;
  /** Canonical JSON-ready fields (with `mechanism` and `format`). */
  readonly fields: Readonly<JsonObject>;
  readonly canonicalJson: string;
  readonly fingerprint: string;
}

/** Reads a field's JSON value (a `parts` field is read by its entry's `readParts`, `specparts.ts`). */
type Normalizer = (value: Json, name: string) => Json;

const CALIBRATION =
  "is calibrated from epsilon by the server: load the server's spec (this client does not calibrate)";

const probability: Normalizer = (v, name) => {
  let f: Fraction;
  if (typeof v === "string") f = parseFraction(v);
  else if (typeof v === "bigint") f = { num: v, den: 1n };
  else if (typeof v === "number") f = fractionOfFloat(v);
  else return fail(`${name} must be a number or a fraction string, got ${dumpJson(v)}`);
  if (f.num < 0n || f.num > f.den) fail(`${name} must be in [0, 1], got ${fractionText(f)}`);
  return fractionText(f);
};

const float: Normalizer = (v, name) => {
  if (typeof v === "bigint") return Number(v);
  if (typeof v === "number" && Number.isFinite(v)) return v;
  return fail(`${name} must be a finite number, got ${dumpJson(v)}`);
};

const integer: Normalizer = (v, name) => {
  if (typeof v === "bigint") return v;
  if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
  return fail(`${name} must be an integer, got ${dumpJson(v)}`);
};

const lowercase: Normalizer = (v, name) =>
  typeof v === "string" ? v.toLowerCase() : fail(`${name} must be a string`);

const domain: Normalizer = (v, name) => {
  if (v === null) return null;
  if (!Array.isArray(v) || v.length === 0) return fail(`${name} must be a non-empty list`);
  const seen = new Set<string>();
  for (const item of v) {
    if (typeof item !== "string" && typeof item !== "bigint") fail(`${name} values must be strings or integers`);
    if (seen.has(String(item))) fail(`${name} has duplicate values (or values that print the same)`);
    seen.add(String(item));
  }
  return v;
};

const NORMALIZERS: Record<Exclude<FieldKind, "parts">, Normalizer> = { domain, float, probability, integer, lowercase };

/**
 * The registered mechanism name (lowercase, `-` not `_`) of one of the
 * catalog's mechanisms; a registered mechanism outside the catalog is
 * refused naming the main entry point, which loads every one.
 */
export function mechanismNameIn(catalog: Catalog, name: string): string {
  const key = name.trim().toLowerCase().replaceAll("_", "-");
  if (entryOf(catalog, key) !== undefined) return key;
  if (!MECHANISMS.includes(key)) fail(`unknown mechanism ${JSON.stringify(name)}`);
  return fail(`${key} is not loaded here (only ${Object.keys(catalog).join(", ")}): load it with loadSpec of ldp-client`);
}

/** Canonical fields of a spec object: known fields, their types, and the privacy claim against the exact probabilities. */
export function canonicalFieldsIn(catalog: Catalog, data: JsonObject): JsonObject {
  if (typeof data.mechanism !== "string") fail("spec has no 'mechanism' field");
  const mechanism = mechanismNameIn(catalog, data.mechanism);
  const entry = catalog[mechanism];
  const fields = entry.fields;
  if ("format" in data && data.format !== SPEC_FORMAT) fail(`spec format ${dumpJson(data.format)} is not supported`);
  const unknown = Object.keys(data).filter((k) => k !== "mechanism" && k !== "format" && !(k in fields));
  if (unknown.length) fail(`${mechanism} spec has unknown fields: ${unknown.join(", ")}`);
  const out: JsonObject = Object.create(null);
  out.mechanism = mechanism;
  out.format = SPEC_FORMAT;
  for (const [name, [kind, ...given]] of Object.entries(fields)) {
    const fallback = given.length ? (given[0] as Json) : undefined;
    const value = data[name];
    if (value === undefined || (value === null && fallback === null)) {
      if (fallback === undefined) fail(`${mechanism}: ${name} ${entry.calibrated?.includes(name) ? CALIBRATION : "is required"}`);
      out[name] = fallback;
    } else {
      // a composite spec's parts: its entry's reader (generated with every `parts` field)
      out[name] = kind === "parts" ? entry.readParts!(value, name, catalog) : NORMALIZERS[kind](value, name);
    }
  }
  catalogComplete(catalog, out); // a mechanism's derived fields (RAPPOR's sizes), from its module in privacy/
  checkClaimFacts(out, catalogPrivacy(catalog, out));
  return out;
}

/** Fingerprint: the first 16 hex digits of SHA-256 of the canonical JSON. */
export function fingerprintOf(canonicalJson: string): string {
  return toHex(sha256(utf8(canonicalJson))).slice(0, 16);
}

/** Specs made by `loadSpec` (checked, frozen); any other object passed as a Spec is checked again (`checkedSpec`). */
const LOADED = new WeakSet<Spec>();

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}

/**
 * The spec fingerprint an ETag (or a task description's `fingerprint`) holds:
 * quotes and a weak `W/` prefix removed, lowercase, 16 hex digits. Explains
 * what is wrong otherwise (a missing header is `null`).
 */
export function fingerprintOfTag(tag: unknown): string {
  if (tag === null || tag === undefined) {
    throw new RangeError(
      `no expected spec fingerprint (got ${String(tag)}): a page on another origin cannot read the spec's ETag ` +
        "unless the collector exposes it; take the fingerprint from the task (GET /v1/tasks/{task}, its " +
        '"fingerprint" field: fetchTaskSpec does both requests)',
    );
  }
  if (typeof tag !== "string") throw new RangeError(`the expected spec fingerprint must be a string, got ${typeof tag}`);
  let t = tag.trim();
  if (t.startsWith("W/")) t = t.slice(2);
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) t = t.slice(1, -1);
  t = t.toLowerCase();
  if (!/^[0-9a-f]{16}$/.test(t)) {
    throw new RangeError(`expected spec fingerprint ${JSON.stringify(clip(tag, 40))} is not 16 hex digits (an ETag such as "7d94b1758a32a30d")`);
  }
  return t;
}

/**
 * Load a spec from JSON text or a parsed object: known fields, canonical form,
 * fingerprint, and the privacy claim checked against the exact probabilities.
 * With `expectedFingerprint` (16 hex digits; an ETag's quotes and `W/` are
 * removed), refuse a spec whose canonical form does not have it. Passing
 * `null` (a header the page could not read) is refused with the reason: pass
 * `undefined`, or omit it, only when the spec's origin is trusted otherwise.
 * The returned spec is frozen.
 */
export function loadSpecIn(catalog: Catalog, source: string | JsonObject, expectedFingerprint?: string | null): Spec {
  const expected = expectedFingerprint === undefined ? undefined : fingerprintOfTag(expectedFingerprint);
  const data = typeof source === "string" ? parseJson(source) : source;
  if (data === null || typeof data !== "object" || Array.isArray(data)) fail("a spec must be a JSON object");
  const fields = deepFreeze(canonicalFieldsIn(catalog, data));
  const canonicalJson = dumpJson(fields);
  const spec: Spec = Object.freeze({
    mechanism: fields.mechanism as string,
    fields,
    canonicalJson,
    fingerprint: fingerprintOf(canonicalJson),
  });
  if (expected !== undefined && expected !== spec.fingerprint) {
    fail(
      `spec fingerprint ${spec.fingerprint} is not the expected ${expected}: this is not the task's spec ` +
        "(or it was changed on the way); load the spec the collector serves",
    );
  }
  LOADED.add(spec);
  return spec;
}

/**
 * `spec` if `loadSpec` made it; otherwise (an object built by hand) its
 * fields loaded again, which must give the same canonical JSON and
 * fingerprint. Every encoder and the ledger call it, so no entry point skips
 * the checks of `loadSpec`.
 */
export function checkedSpecIn(catalog: Catalog, spec: Spec): Spec {
  if (LOADED.has(spec)) return spec;
  if (spec === null || typeof spec !== "object" || spec.fields === null || typeof spec.fields !== "object") {
    fail("not a spec: load it with loadSpec");
  }
  const again = loadSpecIn(catalog, spec.fields as JsonObject);
  if (again.canonicalJson !== spec.canonicalJson || again.fingerprint !== spec.fingerprint || again.mechanism !== spec.mechanism) {
    fail(`spec ${String(spec.fingerprint)} does not match its fields (canonical fingerprint ${again.fingerprint}): load it with loadSpec`);
  }
  LOADED.add(spec);
  return spec;
}

/** The spec's categorical domain (frequency oracles, basic RAPPOR). */
export function specDomain(spec: Spec): DomainValue[] {
  return domainOf(spec.fields);
}

/** A probability field as an exact fraction. */
export function specFraction(spec: Spec, name: string): Fraction {
  return prob(spec.fields, name);
}

/** An integer field. */
export function specInt(spec: Spec, name: string): bigint {
  return int(spec.fields, name);
}

/** A float field. */
export function specFloat(spec: Spec, name: string): number {
  const v = spec.fields[name];
  if (typeof v !== "number") fail(`${spec.mechanism} spec has no number ${name}`);
  return v;
}
