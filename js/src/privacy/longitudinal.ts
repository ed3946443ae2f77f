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
import { type MechanismPrivacy, domainSize, prob } from "../privacyfields.js";
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
  const probabilities = ["p1", "q1", "p2", "q2"].map((name) => prob(fields, name));
  for (const p of probabilities) if (p.num <= 0n || compare(p, ONE) >= 0) fail(`${mechanism}: probabilities must be in (0, 1)`);
  const [p1, q1, p2, q2] = probabilities;
  const eq = (a: Fraction, b: Fraction) => compare(a, b) === 0;
  const complement = (p: Fraction, q: Fraction) => eq(add(p, q), ONE) && compare(p, HALF) > 0;
  const oue = (p: Fraction, q: Fraction) => eq(p, HALF) && compare(q, HALF) < 0;
  const grr = mechanism === "l-grr";
  const form = grr
    ? eq(q1, divInt(sub(ONE, p1), k - 1n)) && eq(q2, divInt(sub(ONE, p2), k - 1n)) &&
      compare(mul(p1, fraction(k)), ONE) > 0 && compare(mul(p2, fraction(k)), ONE) > 0
    : mechanism === "l-osue"
      ? oue(p1, q1) && complement(p2, q2)
      : mechanism === "l-oue"
        ? oue(p1, q1) && oue(p2, q2)
        : complement(p1, q1) && complement(p2, q2);
  if (!form) fail(`${mechanism}: the probabilities p1, q1, p2, q2 are not of the chain's form`);
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
