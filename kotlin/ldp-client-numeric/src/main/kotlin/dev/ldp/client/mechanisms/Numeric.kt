package dev.ldp.client.mechanisms

import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.Bytes
import dev.ldp.client.Claim
import dev.ldp.client.Encoder
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Epsilon
import dev.ldp.client.Exact
import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.Report
import dev.ldp.client.BitReader
import dev.ldp.client.KnuthYao
import dev.ldp.client.ReportBits
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.Text
import dev.ldp.client.ValueException
import dev.ldp.client.Values
import java.math.BigInteger
import java.security.MessageDigest

/**
 * A numeric spec's sampling table (the port of `NumericTable` of `js/src/numeric.ts`), as the server
 * and the vectors write it (tests/vectors/README.md, `numeric`): Duchi's and stochastic rounding's
 * two-point table follows from the spec ([twoPoint]); a grid mechanism's (piecewise, hybrid, Laplace,
 * Gaussian) is the server's ([fromJson] of `GET /v1/tasks/{task}/tables`), never rebuilt here: it
 * depends on libm's `exp` and `log`.
 *
 * @property kind `two-point`, `rows` (piecewise; hybrid's PM part) or `shift` (Laplace, Gaussian)
 * @property outputs the report value of each output cell (the native scale, inputs mapped to [−1, 1])
 * @property p two-point: P[keep]
 * @property grid gridded: the input grid size K
 * @property total gridded: the total weight of every row
 * @property band rows: (a, b, m): weight a on the m band cells, b elsewhere
 * @property alpha hybrid: P[use the piecewise part]
 * @property duchiP hybrid: its Duchi part's P[keep]
 * @property duchiOutputs hybrid: its Duchi part's outputs
 * @property weights shift: the weights of the noise z = −M..M
 * @property digest SHA-256 (hex) of the weights (int64) and outputs (doubles), big-endian; null: unchecked
 */
public class NumericTable(
    public val kind: String,
    outputs: DoubleArray,
    public val p: Fraction? = null,
    public val grid: BigInteger? = null,
    public val total: BigInteger? = null,
    public val band: Band? = null,
    public val alpha: Fraction? = null,
    public val duchiP: Fraction? = null,
    duchiOutputs: DoubleArray? = null,
    weights: List<BigInteger>? = null,
    public val digest: String? = null,
) {
    private val outputValues = outputs.copyOf()
    private val duchiValues = duchiOutputs?.copyOf()

    /** The weights of the noise (shift tables), immutable. */
    public val weights: List<BigInteger>? = weights?.let { java.util.Collections.unmodifiableList(ArrayList(it)) }

    /** A copy of the report values of the output cells. */
    public val outputs: DoubleArray get() = outputValues.copyOf()

    /** A copy of hybrid's Duchi outputs (null for other tables). */
    public val duchiOutputs: DoubleArray? get() = duchiValues?.copyOf()

    internal fun output(j: Int): Double = outputValues[j]

    internal fun duchiOutput(j: Int): Double = duchiValues!![j]

    internal val size: Int get() = outputValues.size

    init {
        if (kind != "two-point" && kind != "rows" && kind != "shift") tableFail("kind must be two-point, rows or shift, got ${Text.clip(kind)}")
        if (outputs.any { it.isNaN() || it.isInfinite() }) tableFail("outputs must be finite numbers")
        when (kind) {
            "two-point" -> {
                if (p == null) tableFail("a two-point table needs p")
                if (outputs.size != 2) tableFail("a two-point table has 2 outputs, got ${outputs.size}")
            }
            "rows" -> {
                if (grid == null || total == null || band == null) tableFail("a rows table needs K, total and band")
                if (grid.signum() <= 0 || grid.bitLength() > 30) tableFail("grid K=$grid out of range")
                if (band.m.signum() < 0 || band.m.bitLength() > 30) tableFail("band m=${band.m} out of range")
                if (outputs.size.toBigInteger() != grid + band.m) tableFail("a rows table of grid $grid and band ${band.m} has ${grid + band.m} outputs, got ${outputs.size}")
                if (total != band.m * band.a + grid * band.b) tableFail("total $total is not m·a + K·b = ${band.m * band.a + grid * band.b}")
            }
            else -> {
                if (grid == null || total == null || weights == null) tableFail("a shift table needs K, total and weights")
                if (grid.signum() <= 0 || grid.bitLength() > 30) tableFail("grid K=$grid out of range")
                if (weights.isEmpty() || weights.size % 2 == 0) tableFail("a shift table has 2M + 1 weights, got ${weights.size}")
                if (weights.fold(BigInteger.ZERO) { s, w -> s + w } != total) tableFail("total $total is not the sum of the weights")
                val m = weights.size / 2
                if (outputs.size < 1) tableFail("a shift table needs outputs")
                if (outputs.size.toLong() != grid.toLong() + 2L * (m - grid.toLong()) + 1) {
                    tableFail("a shift table of grid $grid and ${weights.size} weights has ${grid.toLong() + 2L * (m - grid.toLong()) + 1} outputs, got ${outputs.size}")
                }
            }
        }
        if (alpha != null && (duchiP == null || duchiOutputs == null || duchiOutputs.size != 2)) tableFail("a table with alpha needs duchi_p and two duchi_outputs")
    }

    /** A rows table's band: weight [a] on the [m] band cells of a row, [b] elsewhere. */
    public class Band(public val a: BigInteger, public val b: BigInteger, public val m: BigInteger)

    /** SHA-256 (hex) of a gridded table's weights (int64, row-major) and outputs (doubles), big-endian, as the server computes it. */
    public fun computeDigest(): String {
        val sha = MessageDigest.getInstance("SHA-256")
        when (kind) {
            "rows" -> {
                val (a, b, m) = Triple(int64(band!!.a), int64(band.b), band.m.toInt())
                val k = grid!!.toInt()
                for (i in 0..k) for (j in 0 until k + m) sha.update(if (j >= i && j < i + m) a else b)
            }
            "shift" -> for (w in weights!!) sha.update(int64(w))
            else -> throw SpecException("two-point tables have no digest")
        }
        val out = java.nio.ByteBuffer.allocate(8 * outputValues.size)
        for (v in outputValues) out.putDouble(v) // big-endian
        sha.update(out.array())
        return Bytes.toHex(sha.digest())
    }

    public companion object {
        private fun tableFail(why: String): Nothing = throw SpecException("numeric table: $why")

        private fun int64(x: BigInteger): ByteArray {
            if (x.bitLength() > 63) tableFail("weight $x outside int64")
            return Bytes.toBytesBE(x.toLong(), 8)
        }

        /**
         * The two-point table of a Duchi spec (−C′, +C′ with C′ = 1/(2p − 1) rounded to the nearest double
         * from the exact fraction) or a stochastic-rounding spec ((0, 1)).
         */
        @JvmStatic
        public fun twoPoint(spec: Spec): NumericTable {
            val p = spec.fraction("p")
            return when (spec.mechanism) {
                "stochastic-rounding" -> NumericTable("two-point", doubleArrayOf(0.0, 1.0), p = p)
                "duchi" -> {
                    val c = Exact.fractionToDouble(p.den, p.num.shiftLeft(1) - p.den)
                    NumericTable("two-point", doubleArrayOf(-c, c), p = p)
                }
                else -> throw SpecException("${spec.mechanism} is not a two-point mechanism")
            }
        }

        /**
         * A table from its JSON form, parsed with [dev.ldp.client.Json] (integers as JSON numbers or decimal
         * strings, probabilities as fraction strings); a [SpecException] naming what is wrong.
         */
        @JvmStatic
        public fun fromJson(data: JsonObject): NumericTable {
            val kind = data["kind"] as? String ?: tableFail("no kind")
            @Suppress("UNCHECKED_CAST")
            val band = data["band"]?.let { b ->
                val o = b as? Map<String, Any?> ?: tableFail("band must be an object")
                Band(bigOf(o["a"], "band.a"), bigOf(o["b"], "band.b"), bigOf(o["m"], "band.m"))
            }
            return NumericTable(
                kind = kind,
                outputs = doublesOf(data["outputs"], "outputs") ?: tableFail("no outputs"),
                p = fractionOf(data["p"], "p"),
                grid = data["K"]?.let { bigOf(it, "K") },
                total = data["total"]?.let { bigOf(it, "total") },
                band = band,
                alpha = fractionOf(data["alpha"], "alpha"),
                duchiP = fractionOf(data["duchi_p"], "duchi_p"),
                duchiOutputs = doublesOf(data["duchi_outputs"], "duchi_outputs"),
                weights = (data["weights"] as? List<*>)?.map { bigOf(it, "weights") }
                    ?: if (data["weights"] != null) tableFail("weights must be a list") else null,
                digest = data["digest"]?.let { it as? String ?: tableFail("digest must be hex text") },
            )
        }

        private fun bigOf(v: Any?, name: String): BigInteger = when (v) {
            is BigInteger -> v
            is String -> v.toBigIntegerOrNull() ?: tableFail("$name must be an integer, got ${Text.clip(v, 40, true)}")
            else -> tableFail("$name must be an integer, got $v")
        }

        private fun fractionOf(v: Any?, name: String): Fraction? = when (v) {
            null -> null
            is String -> try {
                Fraction.parse(v).also { if (it.num.signum() < 0 || it > Fraction.ONE) tableFail("$name must be in [0, 1], got $v") }
            } catch (e: SpecException) {
                throw e
            } catch (e: RuntimeException) {
                tableFail("$name must be a fraction, got ${Text.clip(v, 40, true)}")
            }
            else -> tableFail("$name must be a fraction string, got $v")
        }

        private fun doublesOf(v: Any?, name: String): DoubleArray? {
            if (v == null) return null
            val list = v as? List<*> ?: tableFail("$name must be a list of numbers")
            return DoubleArray(list.size) { i -> (list[i] as? Number)?.toDouble() ?: tableFail("$name must be a list of numbers") }
        }

        /** Largest ratio hi/lo over pairs (exact). */
        private fun maxRatio(pairs: Sequence<Pair<BigInteger, BigInteger>>): Fraction {
            var best = Pair(BigInteger.ONE, BigInteger.ONE)
            for ((hi, lo) in pairs) if (hi * best.second > best.first * lo) best = Pair(hi, lo)
            return Fraction.of(best.first, best.second)
        }

        /** (max, min) of every window of `width` consecutive values (monotone deques, linear time). */
        private fun windowExtremes(values: List<BigInteger>, width: Int): Sequence<Pair<BigInteger, BigInteger>> = sequence {
            val hi = java.util.ArrayDeque<Int>()
            val lo = java.util.ArrayDeque<Int>()
            for (i in values.indices) {
                while (hi.isNotEmpty() && values[hi.peekLast()] <= values[i]) hi.pollLast()
                while (lo.isNotEmpty() && values[lo.peekLast()] >= values[i]) lo.pollLast()
                hi.addLast(i)
                lo.addLast(i)
                if (hi.peekFirst() <= i - width) hi.pollFirst()
                if (lo.peekFirst() <= i - width) lo.pollFirst()
                if (i >= width - 1) yield(Pair(values[hi.peekFirst()], values[lo.peekFirst()]))
            }
        }

        /** max over grid inputs i, i′ and outputs j of P[j|i]/P[j|i′] of a gridded table, exactly (Python's `table_privacy_ratio`). */
        @JvmStatic
        public fun privacyRatio(table: NumericTable): Fraction {
            if (table.kind == "rows") {
                val band = table.band!!
                if (band.a.signum() <= 0 || band.b.signum() <= 0) throw SpecException("grid table has an output impossible for some input: no finite epsilon")
                if (band.m.signum() == 0) return Fraction.ONE
                return if (band.a >= band.b) Fraction.of(band.a, band.b) else Fraction.of(band.b, band.a)
            }
            if (table.kind != "shift") throw SpecException("no table ratio for a ${table.kind} table")
            val w = table.weights!!
            val k = table.grid!!.toInt()
            if (w.any { it.signum() <= 0 }) throw SpecException("noise table has zero weights: no finite epsilon")
            val inner = w.subList(1, w.size - 1)
            if (k < 1 || inner.size < k + 1) throw SpecException("noise table of ${w.size} weights is too short for grid $k")
            fun sum(xs: List<BigInteger>) = xs.fold(BigInteger.ZERO) { s, x -> s + x }
            val lowBin = Pair(sum(w.subList(0, k + 1)), w[0])
            val highBin = Pair(sum(w.subList(w.size - (k + 1), w.size)), w[w.size - 1])
            return maxRatio(windowExtremes(inner, k + 1) + sequenceOf(lowBin, highBin))
        }

        private val KINDS = mapOf("piecewise" to "rows", "hybrid" to "rows", "laplace" to "shift", "gaussian" to "shift")

        /**
         * Check a numeric encoder's table against its spec (the TS `checkTableClaim`): the two-point table
         * is the spec's own (`p` and outputs); a grid table has the spec's grid and honours its ε (hybrid:
         * both parts). Gaussian's guarantee is (ε, δ), which the server's table was built for; its grid
         * is checked. A [SpecException] naming what is wrong.
         */
        @JvmStatic
        public fun checkClaim(spec: Spec, table: NumericTable) {
            val mechanism = spec.mechanism
            if (mechanism == "duchi" || mechanism == "stochastic-rounding") {
                val expected = twoPoint(spec)
                if (table.kind != "two-point" || table.p != expected.p || table.size != 2 ||
                    (0..1).any { table.output(it).toRawBits() != expected.output(it).toRawBits() }
                ) {
                    throw SpecException("$mechanism: the table is not the spec's (p=${spec.fields["p"]}); leave the table out, it follows from the spec")
                }
                return
            }
            val kind = KINDS[mechanism] ?: throw SpecException("$mechanism is not a numeric mechanism")
            if (table.kind != kind) throw SpecException("$mechanism needs a $kind table, got ${table.kind}")
            if (table.grid != spec.int("grid")) throw SpecException("$mechanism: the table's grid ${table.grid} is not the spec's ${spec.int("grid")}")
            if ((table.alpha != null) != (mechanism == "hybrid")) {
                throw SpecException("$mechanism: ${if (mechanism == "hybrid") "the table has no alpha" else "only hybrid tables have an alpha"}")
            }
            if (mechanism == "gaussian") return
            val epsilon = Epsilon.statedEpsilon(spec.fields, Claim.privacyFacts(spec.fields))
            var ratio = privacyRatio(table)
            if (mechanism == "hybrid") {
                val alpha = table.alpha!!
                // Duchi's part on the native range [-1, 1]
                val duchi = Claim.privacyRatio(mapOf("mechanism" to "duchi", "low" to -1.0, "high" to 1.0, "p" to table.duchiP.toString()))!!
                if (alpha.num.signum() == 0 || duchi > ratio) ratio = duchi
            }
            Epsilon.checkRatio(mechanism, epsilon, ratio, false, "epsilon")
        }
    }
}

/**
 * The numeric mechanisms (the port of `js/src/numeric.ts`): Duchi, stochastic rounding, piecewise,
 * hybrid, Laplace, Gaussian, each an exact draw from its table ([NumericTable]). The value (a number,
 * or text parsed as one; booleans refused) is clipped to [low, high] and mapped to u ∈ [0, 1]; a
 * position pos ≥ 0 is rounded up by an exact coin of ⌊frac(pos)·2^53⌋/2^53 (nothing read when
 * frac = 0). Two-point: side = round(u), kept with p. Gridded: i = round(u·K); hybrid first draws its
 * α coin (its Duchi part otherwise); then one Knuth–Yao walk picks row i's cell (rows: over the three
 * runs of equal weight b, a, b; shift: over the noise weights). Every coin is on the source's bits
 * ([ReportBits]). The report's `value` is the output, a double on the native scale.
 *
 * Grid tables are the server's: build with [create] (`options.table`) or the constructor; the table is
 * checked against its digest and against the spec's ε ([NumericTable.checkClaim]).
 *
 * @mechanisms duchi stochastic-rounding piecewise hybrid laplace gaussian
 */
public class NumericEncoder @JvmOverloads constructor(
    override val spec: Spec,
    /** The sampling table (default: a two-point spec's own; a grid spec needs the server's). */
    public val table: NumericTable = NumericTable.twoPoint(spec),
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val low = spec.float("low")
    private val span = spec.float("high") - low
    private val bits = ReportBits.reader(source)
    private val keep: KnuthYao?
    private val alpha: KnuthYao?
    private val duchiKeep: KnuthYao?
    private val cells: KnuthYao? // shift: the walk over the noise weights
    private val rows: Array<KnuthYao?> // rows: row i's walk, made on first use
    private val grid: Int

    init {
        NumericTable.checkClaim(spec, table)
        if (table.digest != null && table.computeDigest() != table.digest) {
            throw SpecException("${spec.mechanism} table does not match its digest")
        }
        keep = table.p?.let { ReportBits.coinTable(it) }
        alpha = table.alpha?.let { ReportBits.coinTable(it) }
        duchiKeep = table.duchiP?.let { ReportBits.coinTable(it) }
        grid = table.grid?.toInt() ?: 1
        cells = if (table.kind == "shift") KnuthYao(LongArray(table.weights!!.size) { 1L }, table.weights!!.toTypedArray(), Array(table.weights!!.size) { table.total!! }) else null
        rows = arrayOfNulls(if (table.kind == "rows") grid + 1 else 0)
    }

    /** Row i of a band table as a walk: cells [0, i) of weight b, [i, i + m) of a, [i + m, K + m) of b. */
    private fun row(i: Int): KnuthYao {
        rows[i]?.let { return it }
        val band = table.band!!
        val walk = KnuthYao(longArrayOf(i.toLong(), band.m.toLong(), (grid - i).toLong()), arrayOf(band.b, band.a, band.b), Array(3) { table.total!! })
        synchronized(rows) { return rows[i] ?: walk.also { rows[i] = it } }
    }

    /** The report value (on the native scale) for `value`. */
    public fun sample(value: Any): Double {
        val x = toDouble(value)
        val u = ((x - low) / span).coerceIn(0.0, 1.0)
        if (table.kind == "two-point") {
            val side = randomRound(u, bits)
            return table.output(if (keep!!.flip(bits)) side else 1 - side)
        }
        val i = randomRound(u * grid, bits)
        if (alpha != null && !alpha.flip(bits)) {
            // hybrid's Duchi part: side 1 with i/K
            val side = if (ReportBits.coin(Fraction.of(i.toLong(), grid.toLong()), bits)) 1 else 0
            return table.duchiOutput(if (duchiKeep!!.flip(bits)) side else 1 - side)
        }
        if (table.kind == "rows") {
            val member = LongArray(1)
            val walk = row(i)
            val group = synchronized(bits) { walk.walk(bits, member) }
            val j = when (group) {
                0 -> member[0]
                1 -> i + member[0]
                else -> i + table.band!!.m.toLong() + member[0]
            }
            return table.output(j.toInt())
        }
        // shift: noise index t, output j = clamp(i + t − K, 0, L − 1)
        val t = synchronized(bits) { cells!!.walk(bits, null) }
        return table.output((i + t - grid).coerceIn(0, table.size - 1))
    }

    override fun encode(value: Any): Report = Report(spec.fingerprint, value = sample(value))

    public companion object {
        private val ROUND_SCALE = Math.scalb(1.0, 53)

        /** Python's `float(text)` for decimal text: digits with an optional point and exponent. */
        private val DECIMAL = Regex("[+-]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

        /**
         * The encoder [dev.ldp.client.Registry.makeEncoder] gives: a two-point spec's own table, or the
         * server's table of a grid spec (`options.table`, as `GET /v1/tasks/{task}/tables` serves it).
         */
        @JvmStatic
        public fun create(spec: Spec, source: ByteSource, options: EncoderOptions): Encoder {
            val given = options.table
            if (given == null) {
                if (spec.mechanism == "duchi" || spec.mechanism == "stochastic-rounding") return NumericEncoder(spec, NumericTable.twoPoint(spec), source)
                throw SpecException(
                    "${spec.mechanism} needs the server's sampling table: pass EncoderOptions(table = ...) from GET /v1/tasks/{task}/tables",
                )
            }
            return NumericEncoder(spec, NumericTable.fromJson(given), source)
        }

        /** A number from a value: numbers and decimal text, finite; booleans refused (a [ValueException] naming it). */
        @JvmStatic
        public fun toDouble(value: Any): Double {
            val x = when (val v = Values.normalize(value)) {
                is Double -> v
                is BigInteger -> v.toDouble()
                is String -> {
                    val t = v.trim()
                    when {
                        DECIMAL.matches(t) -> t.toDouble()
                        t.lowercase().trimStart('+', '-') in setOf("inf", "infinity", "nan") -> Double.NaN
                        else -> throw ValueException("not a number: ${Text.clip(v, 80, true)}")
                    }
                }
                else -> throw ValueException("not a number: ${Values.text(v)}")
            }
            if (x.isNaN() || x.isInfinite()) throw ValueException("numeric value must be finite, got ${Text.clip(Values.text(value), 80, true)}")
            return x
        }

        /**
         * Unbiased random rounding of pos ≥ 0: up with probability ⌊frac(pos)·2^53⌋/2^53, one exact coin
         * on `reader` (nothing read when frac = 0).
         */
        internal fun randomRound(pos: Double, reader: BitReader): Int {
            var i = pos.toInt() // truncation (pos ≥ 0)
            val frac = pos - i
            if (frac != 0.0 && ReportBits.dyadicCoin(Math.floor(frac * ROUND_SCALE).toLong(), 53, reader)) i += 1
            return i
        }
    }
}
