package dev.ldp.client.budget

/**
 * The budget's composition arithmetic, as the Python library computes it (the port of
 * `js/src/composition.ts`; `ldp/privacy/spending.py`, `composition.py`, `loss.py`), so a Kotlin ledger
 * takes the same decisions:
 *
 * - [fsum]: the exactly rounded sum (Python's `math.fsum`, Shewchuk's algorithm), the `basic` rule;
 * - [heterogeneousEpsilon]: the `optimal` rule, the exact composition of pure ε_i-DP pieces at δ through
 *   their privacy-loss distribution (equal ε_i grouped into binomials, multiplied, atoms of losses equal
 *   to 1e-9 merged; a product of more than 2,000,000 atoms by log-space convolution when the losses share
 *   a lattice, else evaluated lazily; a third factor beyond such a product falls back to
 *   Kairouz–Oh–Viswanath's Theorem 3.5), then the smallest ε with δ(ε) ≤ δ by Brent's method (SciPy's
 *   `brentq`, same tolerances).
 *
 * Floating-point sums may differ from NumPy's in the last bits, so totals agree to about 1e-12
 * relative; the cross-language vectors check decisions and totals (`tests/vectors/vectors.json`,
 * section `budget`). [StrictMath] throughout, so every JVM and Android release computes the same bits.
 *
 * References: P. Kairouz, S. Oh, P. Viswanath, IEEE Trans. IT 63(6), 2017; S. Meiser, E. Mohammadi,
 * ACM CCS 2018; J. R. Shewchuk, Discrete Comput. Geom. 18, 1997; R. P. Brent, Algorithms for
 * Minimization without Derivatives, 1973, ch. 4.
 */
public object Composition {
    /** The most atoms a product of two privacy-loss distributions is built with (Python's `max_atoms`). */
    public const val DEFAULT_MAX_ATOMS: Int = 2_000_000

    /** Python's `math.fsum`: the correctly rounded sum of [values] (Shewchuk's partials, CPython's `msum`). */
    @JvmStatic
    public fun fsum(values: Iterable<Double>): Double {
        val partials = ArrayList<Double>()
        var special = 0.0
        var anySpecial = false
        for (value in values) {
            var x = value
            if (x.isNaN() || x.isInfinite()) {
                special += x
                anySpecial = true
                continue
            }
            var i = 0
            for (j in partials.indices) {
                var y = partials[j]
                if (Math.abs(x) < Math.abs(y)) {
                    val t = x
                    x = y
                    y = t
                }
                val hi = x + y
                val lo = y - (hi - x)
                if (lo != 0.0) partials[i++] = lo
                x = hi
            }
            while (partials.size > i) partials.removeAt(partials.size - 1)
            partials.add(x)
        }
        if (anySpecial) return special
        var n = partials.size
        if (n == 0) return 0.0
        var hi = partials[--n]
        var lo = 0.0
        while (n > 0) {
            val x = hi
            val y = partials[--n]
            hi = x + y
            val yr = hi - x
            lo = y - yr
            if (lo != 0.0) break
        }
        // the half-way correction of CPython's msum
        if (n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0))) {
            val y = lo * 2
            val x = hi + y
            if (y == x - hi) hi = x
        }
        return hi
    }

    /** [fsum] of an array. */
    @JvmStatic
    public fun fsum(values: DoubleArray): Double = fsum(values.asIterable())

    /** KOV Theorem 3.5: min{Σε, Σ ε_i tanh(ε_i/2) + √(2 ln(1/δ) Σ ε_i²)} (Σε at δ = 0). */
    @JvmStatic
    public fun kovHeterogeneousBound(epsilons: DoubleArray, delta: Double): Double {
        var total = 0.0
        var drift = 0.0
        var squares = 0.0
        for (e in epsilons) {
            total += e
            drift += e * StrictMath.tanh(e / 2)
            squares += e * e
        }
        if (delta == 0.0) return total
        return minOf(total, drift + StrictMath.sqrt(2 * StrictMath.log(1 / delta) * squares))
    }

    /**
     * The tight total ε of pure ε_i-DP pieces at δ (Python's `heterogeneous_epsilon`): the exact
     * composition of ε_i-randomized responses (the worst case of ε_i-DP pieces) at δ, never above the
     * sum; KOV's bound when the exact product is too large. An [AccountingException] for an ε that is
     * not finite and ≥ 0 or a δ outside [0, 1].
     */
    @JvmStatic
    public fun heterogeneousEpsilon(epsilons: DoubleArray, delta: Double): Double {
        for (e in epsilons) {
            if (e.isNaN() || e.isInfinite() || e < 0) throw AccountingException("epsilon must be a finite number >= 0, got $e")
        }
        if (!(delta >= 0 && delta <= 1)) throw AccountingException("delta must be in [0, 1], got $delta")
        if (epsilons.isEmpty()) return 0.0
        val total = fsum(epsilons)
        if (delta == 0.0) return total
        val loss = heterogeneousComposition(epsilons, DEFAULT_MAX_ATOMS) ?: return kovHeterogeneousBound(epsilons, delta)
        return minOf(total, lossEpsilon(loss, delta))
    }

    /**
     * The exact composition of ε_i-randomized responses (Python's `heterogeneous_composition`): equal
     * ε_i grouped into binomials, multiplied in increasing ε; null when a third factor would follow a
     * lazily evaluated product (too many atoms).
     */
    internal fun heterogeneousComposition(epsilons: DoubleArray, maxAtoms: Int): Loss? {
        val counts = java.util.TreeMap<Double, Int>()
        for (e in epsilons) counts[e] = (counts[e] ?: 0) + 1
        var result: Loss = PrivacyLoss.identity()
        for ((eps, n) in counts) {
            if (eps == 0.0) continue
            val part = PrivacyLoss.binomial(eps, n)
            if (result is ProductLoss) return null
            result = if (result.size > 1) (result as PrivacyLoss).compose(part, maxAtoms) else part
        }
        return result
    }

    /** δ(ε) = max(H(P‖Q), H(Q‖P)). */
    private fun deltaOf(loss: Loss, swapped: Loss, epsilon: Double): Double =
        maxOf(loss.hockeyStick(epsilon), swapped.hockeyStick(epsilon))

    /** The smallest ε ≥ 0 with δ(ε) ≤ [delta] (Python's `_LossBase.epsilon`). */
    internal fun lossEpsilon(loss: Loss, delta: Double): Double {
        val swapped = loss.swap()
        var upper = maxOf(loss.maxLoss, swapped.maxLoss)
        if (delta == 0.0) return maxOf(0.0, upper)
        if (upper.isNaN() || upper.isInfinite()) upper = 1e4
        val f = { e: Double -> deltaOf(loss, swapped, e) }
        if (f(0.0) <= delta) return 0.0
        val hi = maxOf(upper + 1e-9, 1.0)
        if (f(hi) > delta) return Double.POSITIVE_INFINITY
        return brentq({ e -> f(e) - delta }, 0.0, hi, 1e-12, 1e-12, 500)
    }

    /** SciPy's `brentq` (scipy/optimize/Zeros/brentq.c), step for step. */
    internal fun brentq(f: (Double) -> Double, xa: Double, xb: Double, xtol: Double, rtol: Double, iter: Int): Double {
        var xpre = xa
        var xcur = xb
        var xblk = 0.0
        var fblk = 0.0
        var spre = 0.0
        var scur = 0.0
        var fpre = f(xpre)
        var fcur = f(xcur)
        if (fpre == 0.0) return xpre
        if (fcur == 0.0) return xcur
        if (Math.signum(fpre) == Math.signum(fcur)) throw AccountingException("brentq: f(a) and f(b) must have different signs")
        for (i in 0 until iter) {
            if (fpre != 0.0 && fcur != 0.0 && Math.signum(fpre) != Math.signum(fcur)) {
                xblk = xpre
                fblk = fpre
                scur = xcur - xpre
                spre = scur
            }
            if (Math.abs(fblk) < Math.abs(fcur)) {
                xpre = xcur
                xcur = xblk
                xblk = xpre
                fpre = fcur
                fcur = fblk
                fblk = fpre
            }
            val tol = (xtol + rtol * Math.abs(xcur)) / 2
            val sbis = (xblk - xcur) / 2
            if (fcur == 0.0 || Math.abs(sbis) < tol) return xcur
            if (Math.abs(spre) > tol && Math.abs(fcur) < Math.abs(fpre)) {
                val stry = if (xpre == xblk) {
                    -fcur * (xcur - xpre) / (fcur - fpre) // interpolate
                } else {
                    val dpre = (fpre - fcur) / (xpre - xcur) // extrapolate
                    val dblk = (fblk - fcur) / (xblk - xcur)
                    -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
                }
                if (2 * Math.abs(stry) < minOf(Math.abs(spre), 3 * Math.abs(sbis) - tol)) {
                    spre = scur // good short step
                    scur = stry
                } else {
                    spre = sbis // bisect
                    scur = sbis
                }
            } else {
                spre = sbis // bisect
                scur = sbis
            }
            xpre = xcur
            fpre = fcur
            xcur += if (Math.abs(scur) > tol) scur else if (sbis > 0) tol else -tol
            fcur = f(xcur)
        }
        return xcur
    }
}

/** A privacy-loss distribution: atoms built ([PrivacyLoss]) or a product evaluated lazily ([ProductLoss]). */
internal sealed class Loss {
    abstract val size: Long
    abstract val maxLoss: Double

    abstract fun swap(): Loss

    /** H_{e^ε}(P‖Q) = Σ_{L > ε} P·(1 − e^{ε−L}). */
    abstract fun hockeyStick(epsilon: Double): Double
}

private const val MERGE_TOLERANCE = 1e-9
private const val KEY_SCALE = 1 / MERGE_TOLERANCE
private val EXACT_KEYS = Math.pow(2.0, 53.0) * MERGE_TOLERANCE
private val LN2 = StrictMath.log(2.0)

/** log(e^a + e^b), as NumPy's logaddexp. */
private fun logAddExp(a: Double, b: Double): Double {
    if (a == b) return a + LN2
    val hi = maxOf(a, b)
    val lo = minOf(a, b)
    if (lo == Double.NEGATIVE_INFINITY) return hi
    return hi + StrictMath.log1p(StrictMath.exp(lo - hi))
}

/** log Σ e^x over xs[from until to], as SciPy's logsumexp (max shifted). */
private fun logSumExp(xs: DoubleArray, from: Int = 0, to: Int = xs.size): Double {
    var max = Double.NEGATIVE_INFINITY
    for (i in from until to) if (xs[i] > max) max = xs[i]
    if (max == Double.NEGATIVE_INFINITY) return max
    if (max.isInfinite() || max.isNaN()) return max
    var sum = 0.0
    for (i in from until to) sum += StrictMath.exp(xs[i] - max)
    return StrictMath.log(sum) + max
}

/** log(1 − e^x) for x ≤ 0 (Mächler 2012). */
private fun log1mexp(x: Double): Double =
    if (x > -LN2) StrictMath.log(-StrictMath.expm1(x)) else StrictMath.log1p(-StrictMath.exp(x))

/** NumPy's round (half to even). */
private fun roundHalfEven(x: Double): Double = Math.rint(x)

/** First index with a[i] > x (a sorted ascending), as numpy.searchsorted(side="right"). */
private fun searchRight(a: DoubleArray, x: Double): Int {
    var lo = 0
    var hi = a.size
    while (lo < hi) {
        val mid = (lo + hi) ushr 1
        if (a[mid] <= x) lo = mid + 1 else hi = mid
    }
    return lo
}

/** ln n! for n = 0..k, a compensated (Neumaier) running sum of logs. */
private fun logFactorials(k: Int): DoubleArray {
    val out = DoubleArray(k + 1)
    var sum = 0.0
    var carry = 0.0
    for (i in 2..k) {
        val x = StrictMath.log(i.toDouble())
        val t = sum + x
        carry += if (Math.abs(sum) >= Math.abs(x)) sum - t + x else x - t + sum
        sum = t
        out[i] = sum + carry
    }
    return out
}

/** log P[Bin(k, p) = x] for x = 0..k from log p and log(1 − p), renormalized to sum to 1. */
private fun binomLogPmf(k: Int, logP: Double, log1mP: Double): DoubleArray {
    val lf = logFactorials(k)
    val out = DoubleArray(k + 1)
    for (x in 0..k) {
        out[x] = lf[k] - lf[x] - lf[k - x] + (if (x > 0) x * logP else 0.0) + (if (k - x > 0) (k - x) * log1mP else 0.0)
    }
    val total = logSumExp(out)
    for (x in 0..k) out[x] -= total
    return out
}

/** Atoms of a pair (P, Q): log-masses sorted by loss ln(P/Q) ascending, atoms of (nearly) equal loss merged. */
internal class PrivacyLoss private constructor(val logP: DoubleArray, val logQ: DoubleArray) : Loss() {
    val loss: DoubleArray = DoubleArray(logP.size) { logP[it] - logQ[it] }

    override val size: Long get() = loss.size.toLong()

    override val maxLoss: Double
        get() {
            var max = Double.NEGATIVE_INFINITY
            for (i in loss.indices) if (logP[i] != Double.NEGATIVE_INFINITY && loss[i] > max) max = loss[i]
            return if (max == Double.NEGATIVE_INFINITY) 0.0 else max
        }

    override fun swap(): PrivacyLoss = PrivacyLoss(logQ.reversedArray(), logP.reversedArray())

    override fun hockeyStick(epsilon: Double): Double {
        val start = searchRight(loss, epsilon)
        if (start >= loss.size) return 0.0
        val terms = DoubleArray(loss.size - start) { logP[start + it] + log1mexp(epsilon - loss[start + it]) }
        return StrictMath.exp(logSumExp(terms))
    }

    /** The pair of two independent mechanisms (a [ProductLoss] when it would exceed [maxAtoms] atoms off a lattice). */
    fun compose(other: PrivacyLoss, maxAtoms: Int): Loss {
        if (size * other.size > maxAtoms) return latticeConvolve(this, other) ?: ProductLoss(this, other)
        val m = other.logP.size
        val n = logP.size * m
        val p = DoubleArray(n)
        val q = DoubleArray(n)
        for (i in logP.indices) {
            for (j in 0 until m) {
                p[i * m + j] = logP[i] + other.logP[j]
                q[i * m + j] = logQ[i] + other.logQ[j]
            }
        }
        return of(p, q)
    }

    companion object {
        /** Merge and sort raw atoms (Python's `_merge`). */
        fun of(logP: DoubleArray, logQ: DoubleArray): PrivacyLoss {
            val keep = ArrayList<Int>()
            for (i in logP.indices) if (!(logP[i] == Double.NEGATIVE_INFINITY && logQ[i] == Double.NEGATIVE_INFINITY)) keep.add(i)
            val key = DoubleArray(keep.size) { i ->
                val l = logP[keep[i]] - logQ[keep[i]]
                // + 0.0: a key of −0.0 is the key 0.0 (NumPy's sort, JavaScript's comparison)
                (if (Math.abs(l) < EXACT_KEYS) roundHalfEven(l * KEY_SCALE) / KEY_SCALE else l) + 0.0
            }
            // a stable sort by key (ties keep their order)
            val order = (0 until keep.size).sortedWith { a, b ->
                if (key[a] < key[b]) -1 else if (key[a] > key[b]) 1 else a.compareTo(b)
            }
            val p = ArrayList<Double>()
            val q = ArrayList<Double>()
            var lastKey = Double.NaN
            for (i in order) {
                val j = keep[i]
                if (p.isNotEmpty() && key[i] == lastKey) {
                    p[p.size - 1] = logAddExp(p[p.size - 1], logP[j])
                    q[q.size - 1] = logAddExp(q[q.size - 1], logQ[j])
                } else {
                    p.add(logP[j])
                    q.add(logQ[j])
                    lastKey = key[i]
                }
            }
            return PrivacyLoss(p.toDoubleArray(), q.toDoubleArray())
        }

        fun identity(): PrivacyLoss = PrivacyLoss(doubleArrayOf(0.0), doubleArrayOf(0.0))

        /** k-fold ε-randomized response: the count of 1s is Bin(k, e^ε/(1+e^ε)) under P, Bin(k, 1/(1+e^ε)) under Q. */
        fun binomial(epsilon: Double, k: Int): PrivacyLoss {
            val hi = -logAddExp(0.0, -epsilon)
            val lo = -logAddExp(0.0, epsilon)
            return of(binomLogPmf(k, hi, lo), binomLogPmf(k, lo, hi))
        }

        /** (step, integer indices) when every loss is an integer multiple of one step. */
        private fun lattice(loss: DoubleArray): Pair<Double, IntArray>? {
            if (loss.any { it.isNaN() || it.isInfinite() }) return null
            var step = Double.POSITIVE_INFINITY
            var maxAbs = 0.0
            for (l in loss) {
                if (Math.abs(l) > MERGE_TOLERANCE && Math.abs(l) < step) step = Math.abs(l)
                maxAbs = maxOf(maxAbs, Math.abs(l))
            }
            if (step == Double.POSITIVE_INFINITY) return null
            val index = IntArray(loss.size)
            val atol = MERGE_TOLERANCE * maxOf(1.0, maxAbs)
            for (i in loss.indices) {
                val k = roundHalfEven(loss[i] / step)
                if (!(Math.abs(k * step - loss[i]) <= atol)) return null
                index[i] = k.toInt()
            }
            return Pair(step, index)
        }

        /** Exact product of two pairs on one lattice, by log-space convolution (Python's `_lattice_convolve`). */
        private fun latticeConvolve(first: PrivacyLoss, second: PrivacyLoss): PrivacyLoss? {
            val la = lattice(first.loss) ?: return null
            val lb = lattice(second.loss) ?: return null
            if (Math.abs(la.first - lb.first) > 1e-12 * la.first) return null
            val step = la.first
            var a = first
            var b = second
            var ia = la.second
            var ib = lb.second
            if (a.loss.size < b.loss.size) {
                a = second
                b = first
                ia = lb.second
                ib = la.second
            }
            val minA = ia.min()
            val lo = minA + ib.min()
            val width = ia.max() + ib.max() - lo + 1
            val dense = DoubleArray(ia.max() - minA + 1) { Double.NEGATIVE_INFINITY }
            for (i in ia.indices) dense[ia[i] - minA] = a.logP[i]
            val out = DoubleArray(width) { Double.NEGATIVE_INFINITY }
            for (n in ib.indices) {
                val start = minA + ib[n] - lo
                val lp = b.logP[n]
                for (i in dense.indices) out[start + i] = logAddExp(out[start + i], dense[i] + lp)
            }
            val p = ArrayList<Double>()
            val q = ArrayList<Double>()
            for (i in out.indices) {
                val v = out[i]
                if (!v.isNaN() && !v.isInfinite()) {
                    p.add(v)
                    q.add(v - (i + lo) * step)
                }
            }
            return of(p.toDoubleArray(), q.toDoubleArray())
        }
    }
}

/** The product of two exact pairs, δ evaluated without building it (Python's `ProductLoss`). */
internal class ProductLoss(val first: PrivacyLoss, val second: PrivacyLoss) : Loss() {
    private val suffixP: DoubleArray
    private val suffixQ: DoubleArray

    init {
        val n = second.logP.size
        suffixP = DoubleArray(n + 1) { Double.NEGATIVE_INFINITY }
        suffixQ = DoubleArray(n + 1) { Double.NEGATIVE_INFINITY }
        for (i in n - 1 downTo 0) {
            suffixP[i] = if (i == n - 1) second.logP[i] else logAddExp(suffixP[i + 1], second.logP[i])
            suffixQ[i] = if (i == n - 1) second.logQ[i] else logAddExp(suffixQ[i + 1], second.logQ[i])
        }
    }

    override val size: Long get() = first.size * second.size

    override val maxLoss: Double get() = first.maxLoss + second.maxLoss

    override fun swap(): ProductLoss = ProductLoss(first.swap(), second.swap())

    override fun hockeyStick(epsilon: Double): Double {
        var total = 0.0
        for (i in first.loss.indices) {
            val t = epsilon - first.loss[i]
            val start = searchRight(second.loss, t)
            val sp = suffixP[start]
            if (sp == Double.NEGATIVE_INFINITY) continue
            val value = StrictMath.exp(sp) * -StrictMath.expm1(minOf(t + suffixQ[start] - sp, 0.0))
            total += StrictMath.exp(first.logP[i]) * maxOf(value, 0.0)
        }
        return total
    }
}
