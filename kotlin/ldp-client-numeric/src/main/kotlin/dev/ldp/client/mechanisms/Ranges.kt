package dev.ldp.client.mechanisms

import dev.ldp.client.KnuthYao
import dev.ldp.client.ReportBits
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.Fraction
import dev.ldp.client.Lanes
import dev.ldp.client.Packing
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.BitReader
import dev.ldp.client.RunSampler
import java.math.BigInteger

/**
 * range-hierarchy (the port of `js/src/ranges.ts`; `ldp/specs/ranges.py`, docs/range-queries.md): a
 * level l uniform on 1..h (h levels of a B-ary tree over the domain), then OUE of the value's level-l
 * node over B^l bits (lanes as runs on the source's bits), in a vector of B^h bits (the rest 0); the report's declared
 * field `level` is l − 1.
 *
 * @mechanisms range-hierarchy
 */
public class RangeHierarchyEncoder @JvmOverloads constructor(
    override val spec: Spec,
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val p = spec.fraction("p")
    private val q = spec.fraction("q")
    private val branching = spec.intValue("branching")

    /** The tree's number of levels h (B^h ≥ the domain size). */
    public val levels: Int

    /** B^h: the report's number of bits. */
    public val leaves: Int
    private val level: KnuthYao
    private val samplers: Array<RunSampler> by lazy { Array(levels) { RunSampler(pow(branching, it + 1), listOf(p, q)) } } // level l's at l − 1
    private val bits = ReportBits.reader(source)

    init {
        if (p <= q || q.num.signum() == 0 || p >= Fraction.ONE) throw SpecException("range-hierarchy needs 0 < q < p < 1")
        if (branching < 2) throw SpecException("range-hierarchy: branching must be at least 2, got $branching")
        var depth = 1
        var width = branching.toLong()
        while (width < index.size) {
            width *= branching
            depth += 1
        }
        if (width > 65535L * 8) throw SpecException("range-hierarchy: $width leaves do not fit a report's bits")
        levels = depth
        leaves = width.toInt()
        level = ReportBits.uniformTable(depth.toLong())
    }

    override fun encode(value: Any): Report {
        val x = index.indexOf(value)
        val l = 1 + level.draw(bits).toInt()
        val width = pow(branching, l)
        val node = x / pow(branching, levels - l)
        val oneHot = Lanes.oneLane(node, width)
        val others = Lanes.fullWords(width)
        others[node ushr 6] = others[node ushr 6] xor oneHot[node ushr 6]
        val lanes = samplers[l - 1].sample(arrayOf(oneHot, others), bits)
        val padded = lanes.copyOf((leaves + 63) ushr 6)
        return Report(spec.fingerprint, extra = listOf("level" to (l - 1).toLong()), bits = Packing.wordsToPacked(padded, leaves))
    }

    private fun pow(base: Int, exponent: Int): Int {
        var out = 1
        repeat(exponent) { out *= base }
        return out
    }
}

/**
 * range-haar (the port of `js/src/ranges.ts`): a level l uniform on 0..h−1 (h = ⌈log₂ d⌉, at least 1),
 * an index j uniform on [0, 2^l), and the sign H[j, a]·s of the value's level-l Haar coefficient (s = +1
 * in the left half of its node a, −1 in the right; H the Hadamard matrix) kept with p; the report's
 * declared fields are `level`, `index` and `bit` (1 for a reported +1).
 *
 * @mechanisms range-haar
 */
public class RangeHaarEncoder @JvmOverloads constructor(
    override val spec: Spec,
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val index = DomainIndex(spec.domain())

    /** The number of levels h. */
    public val levels: Int = maxOf(Integer.toBinaryString(index.size - 1).length, 1)

    /** 2^h leaves. */
    public val leaves: Int = 1 shl levels
    private val level = ReportBits.uniformTable(levels.toLong())
    private val indexOfLevel = Array(levels) { ReportBits.uniformTable(1L shl it) }
    private val keep: KnuthYao
    private val bits = ReportBits.reader(source)

    init {
        val p = spec.fraction("p")
        if (p <= Fraction.of(1L, 2L) || p >= Fraction.ONE) throw SpecException("range-haar needs 1/2 < p < 1")
        keep = ReportBits.coinTable(p)
    }

    override fun encode(value: Any): Report {
        val x = index.indexOf(value)
        val l = level.draw(bits).toInt()
        val j = indexOfLevel[l].draw(bits)
        val span = leaves shr l
        val node = x / span
        val sign = (if (x % span < span / 2) 1 else -1) * (if (java.lang.Long.bitCount(j and node.toLong()) % 2 == 1) -1 else 1)
        val kept = keep.flip(bits)
        val bit = if ((sign > 0) == kept) 1L else 0L
        return Report(spec.fingerprint, extra = listOf("level" to l.toLong(), "index" to j, "bit" to bit))
    }
}
