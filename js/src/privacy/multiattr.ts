/**
 * Privacy facts of multi-attribute records (`ldp/specs/multiattr.py` MultiAttribute).
 */
import { type Fraction, ONE, add, compare, divInt, div, fraction, mul, sub } from "../fraction.js";
import type { Json, JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, int, prob } from "../privacyfields.js";
import { fail } from "../text.js";

const METHODS = ["smp", "spl", "rsfd-grr"];

/** The attributes of canonical fields (each a part spec's canonical fields with its `name`). */
function attributesOf(fields: JsonObject): JsonObject[] {
  const items = fields.attributes as Json;
  if (!Array.isArray(items)) return fail("multi-attribute: attributes must be a list of attribute objects");
  return items as JsonObject[];
}

/**
 * A record's exact worst-case ratio over any two records: the product of the
 * k largest attribute ratios (`smp`, k sampled; `spl`, k = d), or
 * Σ k_j p_j / Σ k_j q_j over the GRR attributes (`rsfd-grr`). Each attribute's
 * own facts come from `parts` (the dispatcher, `mechanismPrivacy`); null when
 * an attribute's ratio is not in its spec (a numeric grid table).
 *
 * @privacy multi-attribute
 */
export function multiAttributePrivacy(
  fields: JsonObject,
  parts: (fields: JsonObject) => MechanismPrivacy | null,
): MechanismPrivacy {
  const attributes = attributesOf(fields);
  const d = attributes.length;
  if (d < 2) fail(`multi-attribute: give at least two attributes, got ${d}`);
  const names = attributes.map((a) => String(a.name));
  if (new Set(names).size !== d) fail(`multi-attribute: attribute names must be distinct, got ${names.join(", ")}`);
  const method = String(fields.method);
  if (!METHODS.includes(method)) {
    fail(`multi-attribute: method must be one of (${METHODS.map((m) => `'${m}'`).join(", ")}), got '${method}'`);
  }
  const k = int(fields, "sample");
  if (k < 1n) fail(`sample must be >= 1, got ${k}`);
  if (method === "smp" && k > BigInt(d)) fail(`multi-attribute: sample (${k}) cannot exceed the ${d} attributes`);
  if (method === "spl" && k !== BigInt(d)) fail(`multi-attribute: spl reports every attribute (sample=${d})`);
  if (method === "rsfd-grr" && k !== 1n) fail("multi-attribute: rsfd-grr samples exactly one attribute (sample=1)");
  const ratios: Fraction[] = [];
  let unknown = false;
  for (const [j, attribute] of attributes.entries()) {
    const facts = parts(attribute);
    const label = `'${names[j]}' (${String(attribute.mechanism)})`;
    if (facts === null) return fail(`multi-attribute: attribute ${label} has no privacy module here`);
    // Python's: an ExactPrivacySpec (RAPPOR is not), not memoized, and no delta (Gaussian)
    if (facts.permanentRatio !== undefined || (attribute.delta !== undefined && attribute.delta !== null)) {
      fail(
        `multi-attribute: attribute ${label} must be a pure epsilon-LDP mechanism with ` +
          "fresh randomness per report and an exact probability ratio",
      );
    }
    if (method === "rsfd-grr" && attribute.mechanism !== "grr") {
      fail(`multi-attribute: rsfd-grr takes GRR attributes; '${names[j]}' is ${String(attribute.mechanism)}`);
    }
    if (facts.ratio === null) unknown = true;
    else ratios.push(facts.ratio);
  }
  if (unknown) {
    // an attribute's ratio is not in its spec (a numeric grid table, checked against its stated ε by the
    // server): the record's stated ε must still cover the k largest attributes' stated ε, by composition
    const stated = attributes.map((a) => Number(a.epsilon)).sort((a, b) => b - a);
    const needed = stated.slice(0, method === "spl" ? d : Number(k)).reduce((x, y) => x + y, 0);
    const epsilon = Number(fields.epsilon);
    if (!(epsilon >= needed * (1 - 1e-12))) {
      fail(`multi-attribute claims epsilon=${epsilon} but its attributes' epsilon add up to ${needed}: load the server's spec`);
    }
    // and must not exceed it: Python's record states e^ε within a relative 1e-9 of the product of the exact
    // ratios, each at most its stated e^ε_j, so a record above their sum (+ ln(1 + 1e-9)) is refused there too
    if (epsilon > needed * (1 + 1e-12) + 2e-9) {
      fail(`multi-attribute states epsilon=${epsilon} but its attributes' epsilon add up to ${needed}: load the server's spec`);
    }
    return { ratio: null };
  }
  if (method === "rsfd-grr") {
    let top: Fraction = fraction(0n);
    let bottom: Fraction = fraction(0n);
    for (const attribute of attributes) {
      const size = domainSize(attribute);
      const p = prob(attribute, "p");
      top = add(top, mul(p, fraction(size)));
      bottom = add(bottom, mul(divInt(sub(ONE, p), size - 1n), fraction(size)));
    }
    return { ratio: div(top, bottom) };
  }
  ratios.sort((a, b) => compare(b, a));
  return { ratio: ratios.slice(0, Number(k)).reduce((product, r) => mul(product, r), ONE) };
}
