package dev.ldp.client.mechanisms

import dev.ldp.client.KnuthYao
import dev.ldp.client.BitReader
import dev.ldp.client.ByteSource
import dev.ldp.client.ReportBits
import dev.ldp.client.ByteSources
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.Fraction
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.UniformBelow
import java.math.BigInteger

/**
 * Floyd's uniform sampling of a `size`-subset of [0, `population`), with the Python client's coins
 * (`ldp/client/subset.py`; `floydSample` of `js/src/subset.ts`): for j = population − size, …,
 * population − 1, t = randbelow(j + 1), and t joins the subset, or j when t is already in it. The
 * samplers of the `size` draws are made once. [SubsetEncoder] no longer uses it: a report's subset is
 * one uniform rank on the source's bits ([dev.ldp.client.ReportBits.uniformSubset]), near its entropy.
 *
 * @property population the values drawn from, [0, population)
 * @property size the members of each subset, in [0, population]
 */
public class Floyd(public val population: Int, public val size: Int) {
    private val draws: Array<UniformBelow>

    init {
        require(size in 0..population) { "a subset of $size of $population values" }
        draws = Array(size) { UniformBelow(BigInteger.valueOf((population - size + it + 1).toLong())) }
    }

    /** One uniform subset: its members in the order they joined. */
    public fun sample(source: ByteSource): List<Int> {
        val chosen = LinkedHashSet<Int>()
        for (i in 0 until size) {
            val j = population - size + i
            val t = draws[i].drawLong(source).toInt()
            chosen.add(if (t in chosen) j else t)
        }
        return chosen.toList()
    }

    /** One uniform subset (the same draws as [sample]) as a bit set: member m is bit m % 64 of word ⌊m/64⌋. */
    public fun sampleWords(source: ByteSource): LongArray {
        val chosen = LongArray((population + 63) ushr 6)
        for (i in 0 until size) {
            val t = draws[i].drawLong(source).toInt()
            val m = if ((chosen[t ushr 6] ushr (t and 63)) and 1L != 0L) population - size + i else t
            chosen[m ushr 6] = chosen[m ushr 6] or (1L shl (m and 63))
        }
        return chosen
    }

    public companion object {
        /** One uniform `size`-subset of [0, `population`) (see [Floyd]). */
        @JvmStatic
        public fun sample(population: Int, size: Int, source: ByteSource): List<Int> = Floyd(population, size).sample(source)
    }
}

/**
 * Subset selection (the port of `js/src/subset.ts`): a random ω-subset of the domain, sent as a d-bit
 * vector. One exact coin of p decides whether the subset holds the true value x (probability p > ω/d),
 * then one uniform subset of the other members from the d − 1 values other than x: a uniform rank
 * below C(d − 1, k), unranked ([ReportBits.uniformSubset], on limbs: [SubsetUnranking]); both on the source's bits, in the Python
 * client's order.
 *
 * @mechanisms ss
 */
public class SubsetEncoder @JvmOverloads constructor(
    override val spec: Spec,
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val p = spec.fraction("p")
    private val omega: Int
    private val coin: KnuthYao
    private val bits = ReportBits.reader(source)

    init {
        val d = index.size
        val omegaField = spec.int("omega")
        if (omegaField < BigInteger.ONE || omegaField > BigInteger.valueOf(d - 1L)) throw SpecException("ss needs 1 <= omega <= d - 1 = ${d - 1}")
        omega = omegaField.toInt()
        if (p <= Fraction.of(omega.toLong(), d.toLong()) || p >= Fraction.ONE) throw SpecException("ss needs omega/d < p < 1")
        coin = ReportBits.coinTable(p)
    }

    override fun encode(value: Any): Report {
        val d = index.size
        val x = index.indexOf(value)
        val holds = coin.flip(bits)
        val others = SubsetUnranking.uniformSubset(d - 1, if (holds) omega - 1 else omega, bits) // in [0, d − 1): x skipped
        val packed = ByteArray((d + 7) ushr 3)
        for (m in others) {
            val i = if (m >= x) m + 1 else m
            packed[i ushr 3] = (packed[i ushr 3].toInt() or (0x80 ushr (i and 7))).toByte()
        }
        if (holds) packed[x ushr 3] = (packed[x ushr 3].toInt() or (0x80 ushr (x and 7))).toByte()
        return Report(spec.fingerprint, bits = packed)
    }
}
