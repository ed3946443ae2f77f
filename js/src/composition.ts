/**
 * The budget's composition arithmetic, as the Python library computes it
 * (`ldp/privacy/spending.py`, `composition.py`, `loss.py`, `exact.py`), so a
 * JS ledger takes the same decisions:
 *
 * - `fsum`: the exactly rounded sum (Python's `math.fsum`, Shewchuk's
 *   algorithm), the `basic` rule;
 * - `heterogeneousEpsilon`: the `optimal` rule, the exact composition of pure
 *   ε_i-DP pieces at δ through their privacy-loss distribution (equal ε_i
 *   grouped into binomials, multiplied, atoms of losses equal to 1e-9 merged;
 *   a product of more than 2,000,000 atoms by log-space convolution when the
 *   losses share a lattice, else evaluated lazily; a third factor beyond such
 *   a product falls back to Kairouz–Oh–Viswanath's Theorem 3.5), then the
 *   smallest ε with δ(ε) ≤ δ by Brent's method (SciPy's `brentq`, same
 *   tolerances);
 * - `epsilonBoundOfRatio`: ln of an exact ratio rounded up to the smallest
 *   double whose certified e^ε bounds it (RAPPOR's ε₁ and ε∞).
 *
 * Floating-point sums may differ from NumPy's in the last bits, so totals
 * agree to about 1e-12 relative; the cross-language vectors check decisions
 * and totals (`../tests/vectors/vectors.json`, section `budget`).
 *
 * References: P. Kairouz, S. Oh, P. Viswanath, IEEE Trans. IT 63(6), 2017;
 * S. Meiser, E. Mohammadi, ACM CCS 2018; J. R. Shewchuk, Discrete Comput.
 * Geom. 18, 1997; R. P. Brent, Algorithms for Minimization without
 * Derivatives, 1973, ch. 4.
 */
// the exact ratios (ldp/exact.py) are in exact.ts; re-exported here for the ledger
export { epsilonBoundOfRatio, epsilonOfRatio, expCorrectlyRounded, fractionToNumber, ratioWithin } from "./exact.js";

/** Python's `math.fsum`: the correctly rounded sum (Shewchuk's partials). */
export function fsum(values: Iterable<number>): number {
  const partials: number[] = [];
  let special = 0;
  for (let x of values) {
    if (!Number.isFinite(x)) {
      special += x;
      continue;
    }
    let i = 0;
    for (let y of partials) {
      if (Math.abs(x) < Math.abs(y)) [x, y] = [y, x];
      const hi = x + y;
      const lo = y - (hi - x);
      if (lo !== 0) partials[i++] = lo;
      x = hi;
    }
    partials.length = i;
    partials.push(x);
  }
  if (special !== 0 || Number.isNaN(special)) return special;
  // sum the partials from the top, with the half-way correction of CPython's msum
  let n = partials.length;
  if (n === 0) return 0;
  let hi = partials[--n];
  let lo = 0;
  while (n > 0) {
    const x = hi;
    const y = partials[--n];
    hi = x + y;
    const yr = hi - x;
    lo = y - yr;
    if (lo !== 0) break;
  }
  if (n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0))) {
    const y = lo * 2;
    const x = hi + y;
    if (y === x - hi) hi = x;
  }
  return hi;
}

// -- privacy-loss distributions (ldp/privacy/loss.py) -------------------------------------------

const MERGE_TOLERANCE = 1e-9;
const KEY_SCALE = 1 / MERGE_TOLERANCE;
const EXACT_KEYS = 2 ** 53 * MERGE_TOLERANCE;
export const DEFAULT_MAX_ATOMS = 2_000_000;

/** log(e^a + e^b), as NumPy's logaddexp. */
function logAddExp(a: number, b: number): number {
  if (a === b) return a + Math.LN2;
  const hi = Math.max(a, b);
  const lo = Math.min(a, b);
  if (lo === -Infinity) return hi;
  return hi + Math.log1p(Math.exp(lo - hi));
}

/** log Σ e^x, as SciPy's logsumexp (max shifted). */
function logSumExp(xs: ArrayLike<number>, from = 0, to = xs.length): number {
  let max = -Infinity;
  for (let i = from; i < to; i++) if (xs[i] > max) max = xs[i];
  if (max === -Infinity) return -Infinity;
  if (!Number.isFinite(max)) return max;
  let sum = 0;
  for (let i = from; i < to; i++) sum += Math.exp(xs[i] - max);
  return Math.log(sum) + max;
}

/** log(1 − e^x) for x ≤ 0 (Mächler 2012). */
function log1mexp(x: number): number {
  return x > -Math.LN2 ? Math.log(-Math.expm1(x)) : Math.log1p(-Math.exp(x));
}

/** Atoms of a pair (P, Q): log-masses sorted by loss ln(P/Q) ascending, atoms of (nearly) equal loss merged. */
export class PrivacyLoss {
  readonly loss: Float64Array;

  private constructor(
    readonly logP: Float64Array,
    readonly logQ: Float64Array,
  ) {
    this.loss = logP.map((p, i) => p - logQ[i]);
  }

  /** Merge and sort raw atoms (Python's `_merge`). */
  static of(logP: Float64Array, logQ: Float64Array): PrivacyLoss {
    const keep: number[] = [];
    for (let i = 0; i < logP.length; i++) if (!(logP[i] === -Infinity && logQ[i] === -Infinity)) keep.push(i);
    const key = new Float64Array(keep.length);
    keep.forEach((j, i) => {
      const loss = logP[j] - logQ[j];
      key[i] = Math.abs(loss) < EXACT_KEYS ? roundHalfEven(loss * KEY_SCALE) / KEY_SCALE : loss;
    });
    const order = Array.from(keep.keys()).sort((a, b) => key[a] - key[b] || a - b); // stable
    const p: number[] = [];
    const q: number[] = [];
    let lastKey = NaN;
    for (const i of order) {
      const j = keep[i];
      if (p.length && key[i] === lastKey) {
        p[p.length - 1] = logAddExp(p[p.length - 1], logP[j]);
        q[q.length - 1] = logAddExp(q[q.length - 1], logQ[j]);
      } else {
        p.push(logP[j]);
        q.push(logQ[j]);
        lastKey = key[i];
      }
    }
    return new PrivacyLoss(Float64Array.from(p), Float64Array.from(q));
  }

  static identity(): PrivacyLoss {
    return new PrivacyLoss(Float64Array.of(0), Float64Array.of(0));
  }

  /** k-fold composition of ε-randomized response: the count of 1s is Bin(k, e^ε/(1+e^ε)) under P, Bin(k, 1/(1+e^ε)) under Q. */
  static binomial(epsilon: number, k: number): PrivacyLoss {
    const hi = -logAddExp(0, -epsilon);
    const lo = -logAddExp(0, epsilon);
    return PrivacyLoss.of(binomLogPmf(k, hi, lo), binomLogPmf(k, lo, hi));
  }

  get size(): number {
    return this.loss.length;
  }

  get maxLoss(): number {
    let max = -Infinity;
    for (let i = 0; i < this.size; i++) if (this.logP[i] !== -Infinity && this.loss[i] > max) max = this.loss[i];
    return max === -Infinity ? 0 : max;
  }

  swap(): PrivacyLoss {
    return new PrivacyLoss(this.logQ.slice().reverse(), this.logP.slice().reverse());
  }

  /** H_{e^ε}(P‖Q) = Σ_{L > ε} P·(1 − e^{ε−L}). */
  hockeyStick(epsilon: number): number {
    const start = searchRight(this.loss, epsilon);
    if (start >= this.size) return 0;
    const terms = new Float64Array(this.size - start);
    for (let i = start; i < this.size; i++) terms[i - start] = this.logP[i] + log1mexp(epsilon - this.loss[i]);
    return Math.exp(logSumExp(terms));
  }

  /** The pair of two independent mechanisms (a `ProductLoss` when it would exceed `maxAtoms` atoms off a lattice). */
  compose(other: PrivacyLoss, maxAtoms = DEFAULT_MAX_ATOMS): PrivacyLoss | ProductLoss {
    if (this.size * other.size > maxAtoms) return latticeConvolve(this, other) ?? new ProductLoss(this, other);
    const n = this.size * other.size;
    const logP = new Float64Array(n);
    const logQ = new Float64Array(n);
    for (let i = 0; i < this.size; i++) {
      for (let j = 0; j < other.size; j++) {
        logP[i * other.size + j] = this.logP[i] + other.logP[j];
        logQ[i * other.size + j] = this.logQ[i] + other.logQ[j];
      }
    }
    return PrivacyLoss.of(logP, logQ);
  }
}

/** NumPy's round (half to even). */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** First index with a[i] > x (a sorted ascending), as numpy.searchsorted(side="right"). */
function searchRight(a: Float64Array, x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** ln Γ(n + 1) = ln n! for n = 0..k, a compensated (Neumaier) running sum of logs. */
function logFactorials(k: number): Float64Array {
  const out = new Float64Array(k + 1);
  let sum = 0;
  let carry = 0;
  for (let i = 2; i <= k; i++) {
    const x = Math.log(i);
    const t = sum + x;
    carry += Math.abs(sum) >= Math.abs(x) ? sum - t + x : x - t + sum;
    sum = t;
    out[i] = sum + carry;
  }
  return out;
}

function minOf(a: Int32Array): number {
  let m = Infinity;
  for (const x of a) if (x < m) m = x;
  return m;
}

function maxOf(a: Int32Array): number {
  let m = -Infinity;
  for (const x of a) if (x > m) m = x;
  return m;
}

/** log P[Bin(k, p) = x] for x = 0..k from log p and log(1 − p), renormalized to sum to 1. */
function binomLogPmf(k: number, logP: number, log1mP: number): Float64Array {
  const lf = logFactorials(k);
  const out = new Float64Array(k + 1);
  for (let x = 0; x <= k; x++) out[x] = lf[k] - lf[x] - lf[k - x] + (x > 0 ? x * logP : 0) + (k - x > 0 ? (k - x) * log1mP : 0);
  const total = logSumExp(out);
  return out.map((v) => v - total);
}

/** (step, integer indices) when every loss is an integer multiple of one step. */
function lattice(loss: Float64Array): [number, Int32Array] | null {
  if (!loss.every(Number.isFinite)) return null;
  let step = Infinity;
  let maxAbs = 0;
  for (const l of loss) {
    if (Math.abs(l) > MERGE_TOLERANCE && Math.abs(l) < step) step = Math.abs(l);
    maxAbs = Math.max(maxAbs, Math.abs(l));
  }
  if (step === Infinity) return null;
  const index = new Int32Array(loss.length);
  const atol = MERGE_TOLERANCE * Math.max(1, maxAbs);
  for (let i = 0; i < loss.length; i++) {
    const k = roundHalfEven(loss[i] / step);
    if (!(Math.abs(k * step - loss[i]) <= atol)) return null;
    index[i] = k;
  }
  return [step, index];
}

/** Exact product of two pairs on one lattice, by log-space convolution (Python's `_lattice_convolve`). */
function latticeConvolve(a: PrivacyLoss, b: PrivacyLoss): PrivacyLoss | null {
  const la = lattice(a.loss);
  const lb = lattice(b.loss);
  if (la === null || lb === null || Math.abs(la[0] - lb[0]) > 1e-12 * la[0]) return null;
  const step = la[0];
  let [ia, ib] = [la[1], lb[1]];
  if (a.size < b.size) [a, b, ia, ib] = [b, a, ib, ia];
  const minA = minOf(ia);
  const lo = minA + minOf(ib);
  const width = maxOf(ia) + maxOf(ib) - lo + 1;
  const dense = new Float64Array(maxOf(ia) - minA + 1).fill(-Infinity);
  ia.forEach((k, i) => (dense[k - minA] = a.logP[i]));
  const out = new Float64Array(width).fill(-Infinity);
  ib.forEach((j, n) => {
    const start = minA + j - lo;
    const lp = b.logP[n];
    for (let i = 0; i < dense.length; i++) out[start + i] = logAddExp(out[start + i], dense[i] + lp);
  });
  const p: number[] = [];
  const q: number[] = [];
  out.forEach((v, i) => {
    if (Number.isFinite(v)) {
      p.push(v);
      q.push(v - (i + lo) * step);
    }
  });
  return PrivacyLoss.of(Float64Array.from(p), Float64Array.from(q));
}

/** The product of two exact pairs, δ evaluated without building it (Python's `ProductLoss`). */
export class ProductLoss {
  private readonly suffixP: Float64Array;
  private readonly suffixQ: Float64Array;

  constructor(
    readonly first: PrivacyLoss,
    readonly second: PrivacyLoss,
  ) {
    const n = second.size;
    this.suffixP = new Float64Array(n + 1).fill(-Infinity);
    this.suffixQ = new Float64Array(n + 1).fill(-Infinity);
    for (let i = n - 1; i >= 0; i--) {
      this.suffixP[i] = i === n - 1 ? second.logP[i] : logAddExp(this.suffixP[i + 1], second.logP[i]);
      this.suffixQ[i] = i === n - 1 ? second.logQ[i] : logAddExp(this.suffixQ[i + 1], second.logQ[i]);
    }
  }

  get size(): number {
    return this.first.size * this.second.size;
  }

  get maxLoss(): number {
    return this.first.maxLoss + this.second.maxLoss;
  }

  swap(): ProductLoss {
    return new ProductLoss(this.first.swap(), this.second.swap());
  }

  hockeyStick(epsilon: number): number {
    let total = 0;
    for (let i = 0; i < this.first.size; i++) {
      const t = epsilon - this.first.loss[i];
      const start = searchRight(this.second.loss, t);
      const sp = this.suffixP[start];
      if (sp === -Infinity) continue;
      const value = Math.exp(sp) * -Math.expm1(Math.min(t + this.suffixQ[start] - sp, 0));
      total += Math.exp(this.first.logP[i]) * Math.max(value, 0);
    }
    return total;
  }
}

type Loss = PrivacyLoss | ProductLoss;

/** δ(ε) = max(H(P‖Q), H(Q‖P)). */
function deltaOf(loss: Loss, swapped: Loss, epsilon: number): number {
  return Math.max(loss.hockeyStick(epsilon), swapped.hockeyStick(epsilon));
}

/** The smallest ε ≥ 0 with δ(ε) ≤ delta (Python's `_LossBase.epsilon`). */
export function lossEpsilon(loss: Loss, delta: number): number {
  const swapped = loss.swap();
  let upper = Math.max(loss.maxLoss, swapped.maxLoss);
  if (delta === 0) return Math.max(0, upper);
  if (!Number.isFinite(upper)) upper = 1e4;
  const f = (e: number) => deltaOf(loss, swapped, e);
  if (f(0) <= delta) return 0;
  const hi = Math.max(upper + 1e-9, 1);
  if (f(hi) > delta) return Infinity;
  return brentq((e) => f(e) - delta, 0, hi, 1e-12, 1e-12, 500);
}

/** SciPy's `brentq` (scipy/optimize/Zeros/brentq.c), step for step. */
export function brentq(f: (x: number) => number, xa: number, xb: number, xtol: number, rtol: number, iter: number): number {
  let xpre = xa;
  let xcur = xb;
  let xblk = 0;
  let fblk = 0;
  let spre = 0;
  let scur = 0;
  let fpre = f(xpre);
  let fcur = f(xcur);
  if (fpre === 0) return xpre;
  if (fcur === 0) return xcur;
  if (Math.sign(fpre) === Math.sign(fcur)) throw new RangeError("brentq: f(a) and f(b) must have different signs");
  for (let i = 0; i < iter; i++) {
    if (fpre !== 0 && fcur !== 0 && Math.sign(fpre) !== Math.sign(fcur)) {
      xblk = xpre;
      fblk = fpre;
      spre = scur = xcur - xpre;
    }
    if (Math.abs(fblk) < Math.abs(fcur)) {
      xpre = xcur;
      xcur = xblk;
      xblk = xpre;
      fpre = fcur;
      fcur = fblk;
      fblk = fpre;
    }
    const delta = (xtol + rtol * Math.abs(xcur)) / 2;
    const sbis = (xblk - xcur) / 2;
    if (fcur === 0 || Math.abs(sbis) < delta) return xcur;
    if (Math.abs(spre) > delta && Math.abs(fcur) < Math.abs(fpre)) {
      let stry: number;
      if (xpre === xblk) {
        stry = (-fcur * (xcur - xpre)) / (fcur - fpre); // interpolate
      } else {
        const dpre = (fpre - fcur) / (xpre - xcur); // extrapolate
        const dblk = (fblk - fcur) / (xblk - xcur);
        stry = (-fcur * (fblk * dblk - fpre * dpre)) / (dblk * dpre * (fblk - fpre));
      }
      if (2 * Math.abs(stry) < Math.min(Math.abs(spre), 3 * Math.abs(sbis) - delta)) {
        spre = scur; // good short step
        scur = stry;
      } else {
        spre = sbis; // bisect
        scur = sbis;
      }
    } else {
      spre = sbis; // bisect
      scur = sbis;
    }
    xpre = xcur;
    fpre = fcur;
    xcur += Math.abs(scur) > delta ? scur : sbis > 0 ? delta : -delta;
    fcur = f(xcur);
  }
  return xcur;
}

/** The exact composition of ε_i-randomized responses (Python's `heterogeneous_composition`); null when too large (a third factor after a lazy product). */
export function heterogeneousComposition(epsilons: readonly number[], maxAtoms = DEFAULT_MAX_ATOMS): Loss | null {
  const counts = new Map<number, number>();
  for (const e of epsilons) counts.set(e, (counts.get(e) ?? 0) + 1);
  let result: Loss = PrivacyLoss.identity();
  for (const [eps, n] of [...counts].sort((a, b) => a[0] - b[0])) {
    if (eps === 0) continue;
    const part = PrivacyLoss.binomial(eps, n);
    if (result instanceof ProductLoss) return null;
    result = result.size > 1 ? result.compose(part, maxAtoms) : part;
  }
  return result;
}

/** KOV Theorem 3.5: min{Σε, Σ ε_i tanh(ε_i/2) + √(2 ln(1/δ) Σ ε_i²)}. */
export function kovHeterogeneousBound(epsilons: readonly number[], delta: number): number {
  const total = epsilons.reduce((a, b) => a + b, 0);
  if (delta === 0) return total;
  const drift = epsilons.reduce((a, e) => a + e * Math.tanh(e / 2), 0);
  const squares = epsilons.reduce((a, e) => a + e * e, 0);
  return Math.min(total, drift + Math.sqrt(2 * Math.log(1 / delta) * squares));
}

/** The tight total ε of pure ε_i-DP pieces at δ (Python's `heterogeneous_epsilon`). */
export function heterogeneousEpsilon(epsilons: readonly number[], delta: number): number {
  for (const e of epsilons) if (!Number.isFinite(e) || e < 0) throw new RangeError(`epsilon must be a finite number >= 0, got ${e}`);
  if (!(delta >= 0 && delta <= 1)) throw new RangeError(`delta must be in [0, 1], got ${delta}`);
  if (epsilons.length === 0) return 0;
  const total = fsum(epsilons);
  if (delta === 0) return total;
  const loss = heterogeneousComposition(epsilons);
  if (loss === null) return kovHeterogeneousBound(epsilons, delta);
  return Math.min(total, lossEpsilon(loss, delta));
}
