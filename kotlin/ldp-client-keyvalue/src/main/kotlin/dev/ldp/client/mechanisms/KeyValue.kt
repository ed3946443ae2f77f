package dev.ldp.client.mechanisms

import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.Fraction
import dev.ldp.client.Json
import dev.ldp.client.LdpException
import dev.ldp.client.Packing
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.Text
import dev.ldp.client.BitReader
import dev.ldp.client.Lanes
import dev.ldp.client.ReportBits
import dev.ldp.client.RunSampler
import dev.ldp.client.ValueException
import java.math.BigInteger

/**
 * A user's input to the key-value encoders, parsed and checked as Python's `parse_pairs`
 * (`ldp/specs/key_value.py`): a map `{key: value}`, a list (or array) of `[key, value]` pairs (lists,
 * arrays or [Pair]s), or the JSON text of either; keys in the spec's domain, each once; values
 * numbers in [−1, 1] (a [Number], or the decimal text of one; booleans are refused, as the TS client
 * refuses them). An empty set is allowed (the user reports a dummy key).
 */
internal object KeyValueInput {
    private val DECIMAL = Regex("""^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$""")

    /** A key or value in a message: a string as is, else its JSON (its text when it has none), clipped. */
    private fun shown(v: Any?): String {
        val text = when (v) {
            is String -> v
            is Array<*> -> v.contentDeepToString()
            else -> try {
                Json.dump(v)
            } catch (e: LdpException) {
                v.toString()
            }
        }
        return Text.clip(text, 80, true)
    }

    private fun number(raw: Any?, key: Any?): Double {
        val x = when (raw) {
            is Double -> raw
            is BigInteger -> raw.toDouble()
            is Float, is Int, is Long, is Short, is Byte -> (raw as Number).toDouble()
            is String -> if (DECIMAL.matches(raw.trim())) raw.trim().toDouble() else null
            else -> null
        }
        if (x == null || x.isNaN() || x.isInfinite()) {
            throw ValueException("the value of key ${shown(key)} must be a number, got ${shown(raw)}")
        }
        if (!(x >= -1.0 && x <= 1.0)) throw ValueException("the value of key ${shown(key)} must be in [-1, 1], got ${shown(raw)}")
        return x
    }

    private fun items(input: Any): List<Pair<Any?, Any?>> {
        var value: Any? = input
        if (value is String) {
            value = try {
                Json.parse(value)
            } catch (e: LdpException) {
                throw ValueException("a key-value input must be a JSON object such as {\"a\": 0.5} or a list of [key, value] pairs")
            }
        }
        if (value is Array<*>) value = value.toList()
        return when (value) {
            is Map<*, *> -> value.entries.map { it.key to it.value }
            is List<*> -> value.map { item ->
                when {
                    item is Pair<*, *> -> item.first to item.second
                    item is List<*> && item.size == 2 -> item[0] to item[1]
                    item is Array<*> && item.size == 2 -> item[0] to item[1]
                    else -> throw ValueException("a key-value pair must be [key, value], got ${shown(item)}")
                }
            }
            else -> throw ValueException("a key-value input must be a JSON object or a list of [key, value] pairs")
        }
    }

    /** The pairs as (key index, value), in input order. */
    fun parse(index: DomainIndex, input: Any): List<Pair<Int, Double>> {
        val seen = HashSet<Int>()
        return items(input).map { (key, raw) ->
            val k = index.indexOf(key)
            if (!seen.add(k)) throw ValueException("key ${shown(key)} appears twice in one user's pairs")
            k to number(raw, key)
        }
    }
}

/**
 * The coins the key-value encoders share, Python's per-report samplers on the source's bits
 * ([ReportBits]; safe for concurrent threads, each draw holding the reader).
 */
internal class KeyValueCoins(source: ByteSource) {
    /** The source's bit reader. */
    val bits = ReportBits.reader(source)

    /** uniform(n). */
    fun below(n: Int): Int = ReportBits.uniform(n.toLong(), bits).toInt()

    /** True with the exact probability p. */
    fun coin(p: Fraction): Boolean = ReportBits.coin(p, bits)

    /** ±1 with P[+1] = ⌊(1 + v)·2^63⌋/2^64: one exact coin (nothing read for v = ±1). */
    fun sign(v: Double): Int = if (v >= 1 || ReportBits.dyadicCoin(threshold(v), 64, bits)) 1 else -1

    /**
     * Padding-and-sampling of one user: (padded key index, v* = ±1); draws uniform(η), η = max(n, ℓ),
     * then the discretization. A padding slot i ≥ n is the dummy key d + i − n, value 0.
     */
    fun samplePair(pairs: List<Pair<Int, Double>>, ell: Int, domainSize: Int): Pair<Int, Int> {
        val eta = maxOf(pairs.size, ell)
        val i = below(eta)
        return if (i < pairs.size) pairs[i].first to sign(pairs[i].second) else (domainSize + i - pairs.size) to sign(0.0)
    }

    private companion object {
        /** ⌊(1 + v)·2^63⌋ for a double v in [−1, 1), as an unsigned 64-bit integer: 2^63 + ⌊v·2^63⌋ (a power-of-two scaling, exact). */
        fun threshold(v: Double): Long = Long.MIN_VALUE + Math.floor(v * 9.223372036854775808E18).toLong()
    }
}

/**
 * PCKV-UE (Gu et al., USENIX Security 2020; the port of `js/src/keyvalue.ts`): padding-and-sampling to
 * ℓ pairs, then two bit vectors over the d + ℓ keys (`plus`: y = +1, `minus`: y = −1). Draws, in
 * Python's order on the source's bits: the sampled pair, the discretization, the key coin (a), the
 * sign coin (p, only when the key is kept), then the other keys' nonzero coins (b) as lanes (runs), then
 * for each nonzero key in increasing order its sign (uniform(2): 1 is +1). Input: a user's pairs
 * ([KeyValueInput]).
 *
 * @mechanisms pckv-ue
 */
public class PckvUeEncoder @JvmOverloads constructor(
    override val spec: Spec,
    source: ByteSource = ByteSources.secure,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val a = spec.fraction("a")
    private val b = spec.fraction("b")
    private val p = spec.fraction("p")
    private val ell = spec.intValue("ell")
    private val padded = index.size + ell
    private val coins = KeyValueCoins(source)
    private val nonzero = RunSampler(padded, listOf(b))

    override fun encode(value: Any): Report {
        val (key, sampled) = coins.samplePair(KeyValueInput.parse(index, value), ell, index.size)
        val words = (padded + 63) ushr 6
        val plus = LongArray(words)
        val minus = LongArray(words)
        fun set(lanes: LongArray, i: Int) {
            lanes[i ushr 6] = lanes[i ushr 6] or (1L shl (i and 63))
        }
        if (coins.coin(a)) set(if ((if (coins.coin(p)) sampled else -sampled) > 0) plus else minus, key)
        val others = Lanes.fullWords(padded)
        others[key ushr 6] = others[key ushr 6] xor (1L shl (key and 63))
        val lanes = nonzero.sample(arrayOf(others), coins.bits)
        for (w in lanes.indices) {
            var word = lanes[w]
            while (word != 0L) {
                val lane = word and -word
                word = word xor lane
                val i = 64 * w + java.lang.Long.numberOfTrailingZeros(lane)
                set(if (coins.below(2) == 1) plus else minus, i)
            }
        }
        return Report(
            spec.fingerprint,
            extra = listOf("plus" to Packing.wordsToPacked(plus, padded), "minus" to Packing.wordsToPacked(minus, padded)),
        )
    }
}

/**
 * PCKV-GRR (the port of `js/src/keyvalue.ts`): padding-and-sampling to ℓ pairs, then one (key, sign)
 * by correlated randomized response: with a, the sampled key, its sign kept with p; else a uniform
 * other of the d + ℓ keys and a uniform sign. Input: a user's pairs ([KeyValueInput]).
 *
 * @mechanisms pckv-grr
 */
public class PckvGrrEncoder @JvmOverloads constructor(
    override val spec: Spec,
    source: ByteSource = ByteSources.secure,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val a = spec.fraction("a")
    private val p = spec.fraction("p")
    private val ell = spec.intValue("ell")
    private val others = index.size + ell - 1
    private val coins = KeyValueCoins(source)

    override fun encode(value: Any): Report {
        var (key, s) = coins.samplePair(KeyValueInput.parse(index, value), ell, index.size)
        if (coins.coin(a)) {
            if (!coins.coin(p)) s = -s
        } else {
            val other = coins.below(others)
            key = other + (if (other >= key) 1 else 0)
            s = if (coins.below(2) == 1) 1 else -1
        }
        return Report(spec.fingerprint, extra = listOf("key" to key.toLong(), "sign" to (if (s > 0) 1L else 0L)))
    }
}

/**
 * PrivKVM's single round (Ye et al., IEEE S&P 2019; the port of `js/src/keyvalue.ts`): one uniformly
 * drawn key j; its presence by randomized response (p₁) and, when reported present, its discretized
 * value's sign kept with p₂. `response`: 0 (−1), 2 (+1) or 1 (absent). Input: a user's pairs
 * ([KeyValueInput]).
 *
 * @mechanisms privkvm
 */
public class PrivKvmEncoder @JvmOverloads constructor(
    override val spec: Spec,
    source: ByteSource = ByteSources.secure,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val p1 = spec.fraction("p1")
    private val p2 = spec.fraction("p2")
    private val keys = index.size
    private val coins = KeyValueCoins(source)

    override fun encode(value: Any): Report {
        val held = KeyValueInput.parse(index, value).toMap()
        val j = coins.below(keys)
        val v = held[j]
        var s = coins.sign(v ?: 0.0)
        val present = if (v != null) coins.coin(p1) else !coins.coin(p1)
        if (!coins.coin(p2)) s = -s
        return Report(spec.fingerprint, extra = listOf("key" to j.toLong(), "response" to (if (present) 1L + s else 1L)))
    }
}
