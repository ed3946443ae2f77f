/**
 * Privacy facts of the longitudinal chains (`ldp/specs/longitudinal.py`):
 * memoized, ε₁ from one report (round 2 after round 1), ε∞ from the memo,
 * one memo key per domain value, and the per-report ε the ledger charges a
 * memo key (`memoReportEpsilon`: r reports of one memo may cost more than
 * r·ε₁; docs/longitudinal/chains.md#many-reports).
 */
import { epsilonBoundOfRatio, epsilonOfRatio } from "../exact.js";
import { type Fraction, ONE, add, compare, div, divInt, fraction, mul, sub } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { checkEpsilonLimit } from "../epsilon.js";
import { floatText } from "../float.js";
import { type MechanismPrivacy, domainSize, openProb } from "../privacyfields.js";
import { fail } from "../text.js";

const HALF = fraction(1n, 2n);

/** (A, B): one report supports v with A when x = v and B otherwise (`ldp.chain_math.chain_support`). */
function support(p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction): [Fraction, Fraction] {
  return [add(mul(p1, p2), mul(sub(ONE, p1), q2)), add(mul(q1, p2), mul(sub(ONE, q1), q2))];
}

/** Independent bits over a one-hot vector: one(1 − zero)/((1 − one)·zero). */
function ueRatio(one: Fraction, zero: Fraction): Fraction {
  return div(mul(one, sub(ONE, zero)), mul(sub(ONE, one), zero));
}

const ln = (f: Fraction): number => epsilonOfRatio(f); // ln of a probability (or a ratio), as a double

function logAddExp(a: number, b: number): number {
  if (a === -Infinity) return b;
  if (b === -Infinity) return a;
  const m = Math.max(a, b);
  return m + Math.log1p(Math.exp(-Math.abs(a - b)));
}

/** L-GRR: max over (n_x, n_x′) of the log ratio of r reports, the rest spread evenly over the k − 2 others. */
function grrMemoLogRatio(p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction, k: number, r: number): number {
  const [lp1, lq1, rho] = [ln(p1), ln(q1), ln(p2) - ln(q2)];
  let best = -Infinity;
  for (let j = 0; j <= r; j++) {
    for (let l = 0; j + l <= r; l++) {
      const m = r - j - l;
      let logS = -Infinity;
      if (k > 2) {
        const base = Math.floor(m / (k - 2));
        const extra = m - base * (k - 2);
        logS = logAddExp(extra > 0 ? Math.log(extra) + (base + 1) * rho : -Infinity, Math.log(k - 2 - extra) + base * rho);
      } else if (m > 0) continue;
      const top = logAddExp(logAddExp(lp1 + j * rho, lq1 + l * rho), lq1 + logS);
      const bottom = logAddExp(logAddExp(lq1 + j * rho, lp1 + l * rho), lq1 + logS);
      best = Math.max(best, top - bottom);
    }
  }
  return best;
}

/** The unary chains: the worst count of ones on x's bit times the worst on x′'s. */
function unaryMemoLogRatio(p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction, r: number): number {
  const [a, b, c, d] = [ln(p2), ln(sub(ONE, p2)), ln(q2), ln(sub(ONE, q2))];
  const [x1, x0, o1, o0] = [ln(p1), ln(sub(ONE, p1)), ln(q1), ln(sub(ONE, q1))];
  let up = -Infinity;
  let down = -Infinity;
  for (let n = 0; n <= r; n++) {
    const on = n * a + (r - n) * b;
    const off = n * c + (r - n) * d;
    const setByX = logAddExp(x1 + on, x0 + off);
    const setByOther = logAddExp(o1 + on, o0 + off);
    up = Math.max(up, setByX - setByOther);
    down = Math.max(down, setByOther - setByX);
  }
  return up + down;
}

/**
 * Python's `memo_report_epsilon`: the smallest ε′ ≥ ε₁ with ε(r reports) ≤
 * min(r·ε′, ε∞) for every r, checked for each r < ε∞/ε₁ up to 400 (L-GRR,
 * and LOLOHA as L-GRR over its g buckets) or 4,000 (unary), else the fresh
 * round's own bound when larger.
 */
export function memoReportEpsilon(
  grr: boolean,
  [p1, q1, p2, q2]: Fraction[],
  k: number,
  one: number,
  inf: number,
): number {
  const limit = Math.ceil(inf / one);
  if (limit > (grr ? 400 : 4000)) {
    const fresh = grr
      ? epsilonBoundOfRatio(div(p2, q2))
      : 2 * epsilonBoundOfRatio(compare(div(p2, q2), div(sub(ONE, q2), sub(ONE, p2))) >= 0 ? div(p2, q2) : div(sub(ONE, q2), sub(ONE, p2)));
    return Math.max(one, fresh);
  }
  let worst = one;
  for (let r = 2; r <= limit; r++) {
    const log = grr ? grrMemoLogRatio(p1, q1, p2, q2, k, r) : unaryMemoLogRatio(p1, q1, p2, q2, r);
    worst = Math.max(worst, Math.min(inf, log * (1 + 1e-9) + 1e-12) / r);
  }
  return worst;
}

const cache = new Map<string, number>();

/** Largest ε∞ (`LongitudinalChain.max_epsilon_inf`), and why. */
const MAX_EPSILON_INF = 23;
const MAX_EPSILON_INF_REASON = "the memoized round's smallest probability is a multiple of 2^-64";

/** Why stored probabilities are not of the chain's form ("" when they are): each chain's `_structure`. */
function structure(mechanism: string, k: bigint, p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction): string {
  const eq = (a: Fraction, b: Fraction) => compare(a, b) === 0;
  const oue = (p: Fraction, q: Fraction) => eq(p, HALF) && compare(q, HALF) < 0;
  const sue = (p: Fraction, q: Fraction) => eq(add(p, q), ONE) && compare(p, HALF) > 0;
  switch (mechanism) {
    case "l-grr":
      if (!eq(q1, divInt(sub(ONE, p1), k - 1n)) || !eq(q2, divInt(sub(ONE, p2), k - 1n))) {
        return "GRR rounds need q = (1 - p)/(k - 1) in both rounds";
      }
      if (compare(mul(p1, fraction(k)), ONE) <= 0 || compare(mul(p2, fraction(k)), ONE) <= 0) {
        return `GRR rounds need p > 1/k = 1/${k} in both rounds`;
      }
      return "";
    case "l-osue":
      if (!oue(p1, q1)) return "the OUE round needs p1 = 1/2 > q1";
      return sue(p2, q2) ? "" : "the SUE round needs q2 = 1 - p2 and p2 > 1/2";
    case "l-oue":
      if (!oue(p1, q1)) return "the first OUE round needs p1 = 1/2 > q1";
      return oue(p2, q2) ? "" : "the second OUE round needs p2 = 1/2 > q2";
    default:
      if (!sue(p1, q1)) return "the first SUE round needs q1 = 1 - p1 and p1 > 1/2";
      return sue(p2, q2) ? "" : "the second SUE round needs q2 = 1 - p2 and p2 > 1/2";
  }
}

/**
 * A two-round chain: one report's ratio A/B (L-GRR, randomized response over
 * the domain) or A(1 − B)/((1 − A)B) (the unary chains, two differing bits);
 * the memo's p₁/q₁ or p₁(1 − q₁)/((1 − p₁)q₁); one memo key per value. The
 * probabilities must have the chain's form, as the Python constructor checks.
 *
 * @privacy l-grr l-osue l-oue l-sue
 */
export function longitudinalPrivacy(fields: JsonObject): MechanismPrivacy {
  const mechanism = String(fields.mechanism);
  const k = domainSize(fields);
  if (k < 2n) fail(`${mechanism} needs a domain of at least 2 values, got ${k}`);
  const [stated, statedInf] = [fields.epsilon as number, fields.epsilon_inf as number];
  checkEpsilonLimit(mechanism, "epsilon_inf", statedInf, MAX_EPSILON_INF, MAX_EPSILON_INF_REASON);
  if (!(statedInf > stated)) {
    fail(
      `${mechanism} needs epsilon_inf > epsilon (the memoized round must be the weaker one), ` +
        `got epsilon_inf=${floatText(statedInf)}, epsilon=${floatText(stated)}`,
    );
  }
  const probabilities = ["p1", "q1", "p2", "q2"].map((name) => openProb(fields, name));
  const [p1, q1, p2, q2] = probabilities;
  const grr = mechanism === "l-grr";
  const problem = structure(mechanism, k, p1, q1, p2, q2);
  if (problem) fail(`${mechanism}: ${problem}`);
  const [a, b] = support(p1, q1, p2, q2);
  const ratio = grr ? div(a, b) : ueRatio(a, b);
  const permanentRatio = grr ? div(p1, q1) : ueRatio(p1, q1);
  const one = typeof fields.epsilon === "number" ? fields.epsilon : epsilonBoundOfRatio(ratio);
  const inf = typeof fields.epsilon_inf === "number" ? fields.epsilon_inf : epsilonBoundOfRatio(permanentRatio);
  const key = JSON.stringify([mechanism, String(k), ...probabilities.map((p) => `${p.num}/${p.den}`), one, inf]);
  let perReport = cache.get(key);
  if (perReport === undefined) {
    perReport = memoReportEpsilon(grr, probabilities, Number(k), one, inf);
    cache.set(key, perReport);
  }
  // r reports of one memo cost at most min(r·ε′, ε∞) by ε′'s definition (Python's memo_linear)
  return { ratio, permanentRatio, memoValues: k, memoReportEpsilon: perReport, memoLinear: true };
}
