/**
 * Numeric mechanisms (Duchi, stochastic rounding, piecewise, hybrid, Laplace,
 * Gaussian): exact grid sampling from the spec's integer tables.
 *
 * The tables (weights, band, outputs, hybrid's α and Duchi part) come from the
 * server: they depend on libm `exp`/`log`, so they are never rebuilt here;
 * `tableDigest` checks them against the digest the server publishes, and
 * the encoder checks that a table honours its spec's ε (`claim.ts`).
 */
import { sha256 } from "./hash/sha256.js";
import { bigIntToBytesBE, bitLength, concatBytes, toHex } from "./bytes.js";
import { type Fraction, ONE, compare, fraction, parseFraction } from "./fraction.js";
import { type ByteSource, cryptoSource } from "./random.js";
import { type BitReader, KnuthYao, bitReader, coin, coinOnce, randomRound } from "./reportbits.js";
import type { JsonObject } from "./json.js";
import type { Report } from "./report.js";
import { privacyFacts, privacyRatio } from "./claim.js";
import { checkRatio, statedEpsilon } from "./epsilon.js";
import { clip, fail } from "./text.js";
import { type Spec, checkedSpec, specFloat, specFraction } from "./spec.js";
import { NUMERIC_TABLES } from "./specfields.js";
import type { Value } from "./values.js";

type Int = string | number | bigint;

/** A numeric spec's sampling table, as the server (and the vectors) write it. */
export interface NumericTable {
  kind: "two-point" | "rows" | "shift";
  /** two-point: P[keep], and (out₀, out₁). */
  p?: string;
  outputs: number[];
  /** gridded: input grid size, total weight of every row. */
  K?: Int;
  total?: Int;
  /** rows: weight a on the m band cells, b elsewhere. */
  band?: { a: Int; b: Int; m: Int };
  /** hybrid: P[use the piecewise part], and its Duchi part. */
  alpha?: string;
  duchi_p?: string;
  duchi_outputs?: number[];
  /** shift: weights of the noise z = −M..M. */
  M?: Int;
  weights?: Int[];
  /** SHA-256 (hex) of the weights (int64) and outputs (doubles), big-endian. */
  digest?: string;
}

const MASK64 = (1n << 64n) - 1n;

function int64(x: bigint): Uint8Array {
  return bigIntToBytesBE(x & MASK64, 8);
}

function doubles(values: number[]): Uint8Array {
  const out = new Uint8Array(8 * values.length);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setFloat64(8 * i, v, false));
  return out;
}

/** The weights of a rows table: K + 1 rows of K + m cells, b, then a on [i, i + m), then b. */
function rowWeights(K: number, a: bigint, b: bigint, m: number): Uint8Array {
  const [wa, wb] = [int64(a), int64(b)];
  const out = new Uint8Array(8 * (K + 1) * (K + m));
  let offset = 0;
  for (let i = 0; i <= K; i++) {
    for (let j = 0; j < K + m; j++, offset += 8) out.set(j >= i && j < i + m ? wa : wb, offset);
  }
  return out;
}

/** SHA-256 (hex) of a gridded table's weights and outputs, as the server computes it. */
export function tableDigest(table: NumericTable): string {
  let weights: Uint8Array;
  if (table.kind === "rows") {
    const { a, b, m } = table.band!;
    weights = rowWeights(Number(table.K), BigInt(a), BigInt(b), Number(m));
  } else if (table.kind === "shift") {
    weights = concatBytes(...table.weights!.map((w) => int64(BigInt(w))));
  } else {
    throw new RangeError("two-point tables have no digest");
  }
  return toHex(sha256(concatBytes(weights, doubles(table.outputs))));
}

/** n/d (both > 0) rounded to the nearest double, ties to even. */
export function ratioToDouble(n: bigint, d: bigint): number {
  const shift = 55 - (bitLength(n) - bitLength(d)); // the quotient gets 55 or 56 bits
  const [num, den] = shift >= 0 ? [n << BigInt(shift), d] : [n, d << BigInt(-shift)];
  const q = num / den;
  const sticky = num % den !== 0n;
  const drop = bitLength(q) - 53;
  let m = q >> BigInt(drop);
  const rest = q & ((1n << BigInt(drop)) - 1n);
  const half = 1n << BigInt(drop - 1);
  if (rest > half || (rest === half && (sticky || (m & 1n) === 1n))) m += 1n;
  return Number(m) * 2 ** (drop - shift);
}

/** The two-point table of Duchi (−C′, +C′ with C′ = 1/(2p − 1)) or stochastic rounding (0, 1), from the spec. */
export function twoPointTable(spec: Spec): NumericTable {
  const p = specFraction(spec, "p");
  if (spec.mechanism === "stochastic-rounding") return { kind: "two-point", p: spec.fields.p as string, outputs: [0.0, 1.0] };
  if (spec.mechanism !== "duchi") throw new RangeError(`${spec.mechanism} is not a two-point mechanism`);
  const c = ratioToDouble(p.den, 2n * p.num - p.den);
  return { kind: "two-point", p: spec.fields.p as string, outputs: [-c, c] };
}

/** A number from a value: numbers and numeric strings, finite; booleans refused (a RangeError or TypeError naming it). */
export function toDouble(value: Value): number {
  let x: number;
  if (typeof value === "number") x = value;
  else if (typeof value === "bigint") x = Number(value);
  else if (typeof value === "string" && value.trim() !== "") x = Number(value.trim());
  else throw new TypeError(`not a number: ${clip(String(value), 80, true)}`);
  if (!Number.isFinite(x)) throw new RangeError(`numeric value must be finite, got ${clip(String(value), 80, true)}`);
  return x;
}



/** Randomize one number (clipped to [low, high]) with a numeric spec and its table. */
export class NumericEncoder {
  private readonly low: number;
  private readonly span: number;
  private readonly bits: BitReader;
  private readonly p?: Fraction;
  private readonly alpha?: Fraction;
  private readonly duchiP?: Fraction;
  /** shift: the walk over the noise cells (group t: weight t over the total). */
  private readonly cells?: KnuthYao;
  /** rows: the walk of each grid input's row, made when first drawn. */
  private readonly rows = new Map<number, KnuthYao>();

  constructor(
    readonly spec: Spec,
    readonly table: NumericTable = twoPointTable(spec),
    source: ByteSource = cryptoSource,
  ) {
    checkedSpec(spec);
    const twoPoint = NUMERIC_TABLES[spec.mechanism] === "two-point";
    checkTableClaim(spec.fields, table, twoPoint ? twoPointTable(spec) : null);
    this.low = specFloat(spec, "low");
    this.span = specFloat(spec, "high") - this.low;
    if (table.digest !== undefined && tableDigest(table) !== table.digest) {
      throw new RangeError(`${spec.mechanism} table does not match its digest`);
    }
    this.bits = bitReader(source);
    if (table.p !== undefined) this.p = parseFraction(table.p);
    if (table.alpha !== undefined) this.alpha = parseFraction(table.alpha);
    if (table.duchi_p !== undefined) this.duchiP = parseFraction(table.duchi_p);
    if (table.kind !== "two-point") {
      // the walks take each cell's weight over the total: it must be every row's sum exactly
      const { a, b, m } = table.band ?? { a: 0, b: 0, m: 0 };
      const sum = table.kind === "shift" ? table.weights!.reduce((s: bigint, w) => s + BigInt(w), 0n) : BigInt(m) * BigInt(a) + BigInt(table.K!) * BigInt(b);
      if (table.total === undefined || BigInt(table.total) !== sum) {
        throw new RangeError(`${spec.mechanism} table's total ${table.total} is not its rows' sum of weights ${sum}`);
      }
    }
    if (table.kind === "shift") {
      const total = BigInt(table.total!);
      this.cells = new KnuthYao(
        table.weights!.map((w) => ({ count: 1n, probability: { num: BigInt(w), den: total } })),
        true,
      );
    }
  }

  /** The report value (on the native scale) for `value`. */
  sample(value: Value): number {
    const x = toDouble(value);
    const u = Math.min(1, Math.max(0, (x - this.low) / this.span));
    const t = this.table;
    if (t.kind === "two-point") {
      const side = randomRound(u, this.bits);
      const keep = coin(this.p!, this.bits);
      return t.outputs[keep ? side : 1 - side];
    }
    const K = Number(t.K);
    const i = randomRound(u * K, this.bits);
    if (this.alpha !== undefined && !coin(this.alpha, this.bits)) return this.duchiPart(i, K);
    return t.outputs[t.kind === "rows" ? this.bandCell(i, K) : this.shiftCell(i, K)];
  }

  /** Hybrid's Duchi part, for grid input i: side 1 with i/K, kept with Duchi's p. */
  private duchiPart(i: number, K: number): number {
    const side = coinOnce({ num: BigInt(i), den: BigInt(K) }, this.bits) ? 1 : 0;
    const keep = coin(this.duchiP!, this.bits);
    return this.table.duchi_outputs![keep ? side : 1 - side];
  }

  /** Row i of a band table: the walk over [(i, b/total), (m, a/total), (K − i, b/total)], a cell of [0, K + m). */
  private bandCell(i: number, K: number): number {
    const { a, b, m } = this.table.band!;
    let row = this.rows.get(i);
    if (row === undefined) {
      const total = BigInt(this.table.total!);
      const [wa, wb] = [{ num: BigInt(a), den: total }, { num: BigInt(b), den: total }];
      row = new KnuthYao(
        [
          { count: BigInt(i), probability: wb },
          { count: BigInt(m), probability: wa },
          { count: BigInt(K - i), probability: wb },
        ],
        true,
      );
      this.rows.set(i, row);
    }
    const group = row.sample(this.bits);
    return (group === 0 ? 0 : group === 1 ? i : i + Number(m)) + (row.member as number);
  }

  /** The noise cell t (the walk over the weights), output j = clamp(i + t − K). */
  private shiftCell(i: number, K: number): number {
    const t = this.cells!.sample(this.bits);
    return Math.min(Math.max(i + t - K, 0), this.table.outputs.length - 1);
  }

  encode(value: Value): Report {
    return { spec: this.spec.fingerprint, value: this.sample(value) };
  }
}

const big = (v: string | number | bigint): bigint => BigInt(v);

/** Largest ratio hi/lo over pairs (exact, by cross-multiplication). */
function maxRatio(pairs: Iterable<[bigint, bigint]>): Fraction {
  let best: [bigint, bigint] = [1n, 1n];
  for (const [hi, lo] of pairs) if (hi * best[1] > best[0] * lo) best = [hi, lo];
  return fraction(best[0], best[1]);
}

/** (max, min) of every window of `width` consecutive values (monotone deques, linear time). */
function* windowExtremes(values: readonly bigint[], width: number): Generator<[bigint, bigint]> {
  const hi: number[] = [];
  const lo: number[] = [];
  for (let i = 0; i < values.length; i++) {
    while (hi.length && values[hi[hi.length - 1]] <= values[i]) hi.pop();
    while (lo.length && values[lo[lo.length - 1]] >= values[i]) lo.pop();
    hi.push(i);
    lo.push(i);
    if (hi[0] <= i - width) hi.shift();
    if (lo[0] <= i - width) lo.shift();
    if (i >= width - 1) yield [values[hi[0]], values[lo[0]]];
  }
}

/**
 * max over grid inputs i, i′ and outputs j of P[j|i]/P[j|i′] of a gridded
 * table, exactly (Python's `table_privacy_ratio`).
 */
export function tablePrivacyRatio(table: NumericTable): Fraction {
  if (table.kind === "rows") {
    const { a, b, m } = table.band ?? fail("a rows table needs its band");
    const [wa, wb] = [big(a), big(b)];
    if (wa <= 0n || wb <= 0n) fail("grid table has an output impossible for some input: no finite epsilon");
    if (big(m) === 0n) return ONE;
    return wa >= wb ? fraction(wa, wb) : fraction(wb, wa);
  }
  if (table.kind !== "shift") fail(`no table ratio for a ${table.kind} table`);
  const w = (table.weights ?? fail("a shift table needs its weights")).map(big);
  const K = Number(table.K);
  if (w.some((x) => x <= 0n)) fail("noise table has zero weights: no finite epsilon");
  const inner = w.slice(1, -1);
  if (!(K >= 1) || inner.length < K + 1) fail(`noise table of ${w.length} weights is too short for grid ${K}`);
  const sum = (xs: bigint[]) => xs.reduce((s, x) => s + x, 0n);
  const lowBin: [bigint, bigint] = [sum(w.slice(0, K + 1)), w[0]];
  const highBin: [bigint, bigint] = [sum(w.slice(-(K + 1))), w[w.length - 1]];
  return maxRatio([...windowExtremes(inner, K + 1), lowBin, highBin]);
}

/**
 * Check a numeric encoder's table against its spec: the two-point table is
 * the spec's own (`p` and outputs), a grid table has the spec's grid and
 * honours its ε (hybrid: both parts). Gaussian's guarantee is (ε, δ), which
 * the server's table was built for; its grid is checked.
 */
export function checkTableClaim(fields: JsonObject, table: NumericTable, expected: NumericTable | null): void {
  const mechanism = String(fields.mechanism);
  const kind = NUMERIC_TABLES[mechanism];
  if (kind === "two-point") {
    if (expected === null || table.kind !== "two-point" || table.p !== expected.p || table.outputs.length !== 2 || table.outputs.some((v, i) => v !== expected.outputs[i])) {
      fail(`${mechanism}: the table is not the spec's (p=${String(fields.p)}); leave the table out, it follows from the spec`);
    }
    return;
  }
  if (kind === undefined) fail(`${mechanism} is not a numeric mechanism`);
  if (table.kind !== kind) fail(`${mechanism} needs a ${kind} table, got ${table.kind}`);
  if (big(table.K ?? -1) !== big(fields.grid as bigint)) fail(`${mechanism}: the table's grid ${String(table.K)} is not the spec's ${String(fields.grid)}`);
  if ((table.alpha !== undefined) !== (mechanism === "hybrid")) fail(`${mechanism}: ${mechanism === "hybrid" ? "the table has no alpha" : "only hybrid tables have an alpha"}`);
  if (mechanism === "gaussian") return;
  const epsilon = statedEpsilon(fields, privacyFacts(fields));
  let ratio = tablePrivacyRatio(table);
  if (mechanism === "hybrid") {
    const alpha = parseFraction(table.alpha!);
    if (alpha.num < 0n || compare(alpha, ONE) > 0) fail(`hybrid: alpha must be in [0, 1], got ${table.alpha}`);
    // Duchi's part on the native range [-1, 1]
    const duchiP = table.duchi_p ?? fail("hybrid: the table has no duchi_p");
    const duchi = privacyRatio({ mechanism: "duchi", low: -1.0, high: 1.0, p: duchiP });
    if (alpha.num === 0n || compare(duchi!, ratio) > 0) ratio = duchi!;
  }
  checkRatio(mechanism, epsilon, ratio, false);
}
