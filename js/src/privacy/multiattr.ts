/**
 * Privacy facts of multi-attribute records (`ldp/specs/multiattr.py` MultiAttribute).
 */
import { type Fraction, ONE, add, compare, divInt, div, fraction, mul, sub } from "../fraction.js";
import type { Json, JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, int, prob } from "../privacyfields.js";
import { fail } from "../text.js";

/** RS+FD methods: every attribute's oracle, and the fake data of a non-sampled one. */
const RSFD: Record<string, [string, "uniform" | "zero" | "random"]> = {
  "rsfd-grr": ["grr", "uniform"],
  "rsfd-sue-z": ["sue", "zero"],
  "rsfd-sue-r": ["sue", "random"],
  "rsfd-oue-z": ["oue", "zero"],
  "rsfd-oue-r": ["oue", "random"],
};
const METHODS = ["smp", "spl", ...Object.keys(RSFD)];

type Pair = [Fraction, Fraction];

/**
 * The pairs (t_j(y, x_j), t_j(y, x′_j)) attribute j's outputs give, t_j = P_j(y | x)/F_j(y) with F_j
 * the fake distribution (`MultiAttribute.rsfd_pairs`): `differ` when x_j ≠ x′_j. Only the extremes
 * of each family of outputs are listed, the only ones a ratio of sums can pick.
 */
function rsfdPairs(attribute: JsonObject, fake: "uniform" | "zero" | "random", differ: boolean): Pair[] {
  const k = domainSize(attribute);
  const p = prob(attribute, "p");
  const q = fake === "uniform" ? divInt(sub(ONE, p), k - 1n) : prob(attribute, "q");
  const kk = fraction(k);
  if (fake === "uniform") {
    const high = mul(kk, p);
    const low = mul(kk, q);
    if (!differ) return [[high, high], [low, low]];
    return k > 2n ? [[high, low], [low, high], [low, low]] : [[high, low], [low, high]];
  }
  const alpha = div(p, q);
  const beta = div(sub(ONE, p), sub(ONE, q));
  if (fake === "zero") {
    if (!differ) return [[alpha, alpha], [beta, beta]];
    return [[alpha, beta], [beta, alpha], [alpha, alpha], [beta, beta]];
  }
  const t = (one: boolean, m: bigint): Fraction => div(mul(kk, one ? alpha : beta), add(mul(fraction(m), alpha), mul(fraction(k - m), beta)));
  if (!differ) return [[t(true, 1n), t(true, 1n)], [t(true, k), t(true, k)], [t(false, 0n), t(false, 0n)], [t(false, k - 1n), t(false, k - 1n)]];
  const out: Pair[] = [];
  for (const m of new Set([1n, k - 1n])) out.push([t(true, m), t(false, m)], [t(false, m), t(true, m)]);
  for (const m of new Set([2n, k])) out.push([t(true, m), t(true, m)]);
  for (const m of new Set([0n, k - 2n])) out.push([t(false, m), t(false, m)]);
  return out;
}

/** max over one pair (u_j, w_j) of each part of Σ u_j / Σ w_j, exactly (Dinkelbach; `max_ratio_of_sums`). */
export function maxRatioOfSums(options: Pair[][]): Fraction {
  const ratioOf = (choice: Pair[]): Fraction =>
    div(
      choice.reduce((s, [u]) => add(s, u), fraction(0n)),
      choice.reduce((s, [, w]) => add(s, w), fraction(0n)),
    );
  let ratio = ratioOf(options.map((part) => part[0]));
  for (;;) {
    const score = ([u, w]: Pair): Fraction => sub(u, mul(ratio, w));
    const choice = options.map((part) => part.reduce((best, pair) => (compare(score(pair), score(best)) > 0 ? pair : best)));
    const gain = choice.reduce((s, pair) => add(s, score(pair)), fraction(0n));
    if (compare(gain, fraction(0n)) <= 0) return ratio;
    ratio = ratioOf(choice);
  }
}

/** The attributes of canonical fields (each a part spec's canonical fields with its `name`). */
function attributesOf(fields: JsonObject): JsonObject[] {
  const items = fields.attributes as Json;
  if (!Array.isArray(items)) return fail("multi-attribute: attributes must be a list of attribute objects");
  return items as JsonObject[];
}

/**
 * A record's exact worst-case ratio over any two records: the product of the
 * k largest attribute ratios (`smp`, k sampled; `spl`, k = d), or
 * for RS+FD the exact maximum of Σ_j t_j(y_j, x_j) / Σ_j t_j(y_j, x′_j) over the outputs
 * (`rsfdPairs`, `maxRatioOfSums`; Σ k_j p_j / Σ k_j q_j for GRR). Each attribute's
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
  if (method in RSFD && k !== 1n) fail(`multi-attribute: ${method} samples exactly one attribute (sample=1)`);
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
    if (method in RSFD && attribute.mechanism !== RSFD[method][0]) {
      fail(`multi-attribute: ${method} takes ${RSFD[method][0].toUpperCase()} attributes; '${names[j]}' is ${String(attribute.mechanism)}`);
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
  if (method in RSFD) {
    const fake = RSFD[method][1];
    return { ratio: maxRatioOfSums(attributes.map((attribute) => rsfdPairs(attribute, fake, true))) };
  }
  ratios.sort((a, b) => compare(b, a));
  return { ratio: ratios.slice(0, Number(k)).reduce((product, r) => mul(product, r), ONE) };
}
