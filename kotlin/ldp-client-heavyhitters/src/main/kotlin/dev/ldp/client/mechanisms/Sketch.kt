package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.Encoder
import dev.ldp.client.Fraction
import dev.ldp.client.LaneSampler
import dev.ldp.client.Lanes
import dev.ldp.client.Packing
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.RunSampler
import dev.ldp.client.BitReader
import dev.ldp.client.Values
import dev.ldp.client.hashing.MMH3_MAX_SEED
import dev.ldp.client.hashing.mmh3x64128
import java.math.BigInteger

/** The hashing of the count-mean sketches (`sketchPosition` of `js/src/sketch.ts`; `ldp/specs/sketch.py`). */
public object SketchHash {
    /**
     * h_row(value) in [0, m): h1 of MurmurHash3 x64-128 of the value's bytes ([Values.bytes]) with seed
     * salt + row, as an unsigned 64-bit integer, mod m.
     */
    @JvmStatic
    public fun position(value: Any, row: Int, salt: Long, m: Int): Int {
        val seed = salt + row
        if (row < 0 || salt < 0 || seed > MMH3_MAX_SEED) throw SpecException("sketch seed salt + row = $salt + $row is outside [0, 2^32)")
        return mmh3x64128(Values.bytes(value), seed).h1Mod(m)
    }
}

/** The parameters both sketches share: k rows (hash functions), width m, the seeds' salt, and p. */
private class SketchParameters(spec: Spec) {
    val k: Int = spec.intValue("k")
    val m: Int = spec.intValue("m")
    val salt: Long = spec.int("salt").toLong()
    val p: Fraction = spec.fraction("p")

    init {
        if (k < 1 || m < 2 || salt < 0 || salt + k - 1 > MMH3_MAX_SEED) {
            throw SpecException("${spec.mechanism} needs k >= 1, m >= 2 and salt + k - 1 < 2^32, got k=$k, m=$m, salt=$salt")
        }
    }

    val rows = ReportBits.uniformTable(k.toLong())

    fun position(value: Any, row: Int): Int = SketchHash.position(value, row, salt, m)
}

/**
 * Apple's Count-Mean Sketch (the port of `CMSEncoder` of `js/src/sketch.ts`): row j = uniform(k),
 * then the m bits of the one-hot vector of h_j(x), bit h_j(x) kept 1 with p and every other bit 1 with
 * q = 1 − p, drawn as runs ([RunSampler], built once); all on the source's bits. Any value can be
 * encoded: the sketch needs no domain. The report carries `row` and the bits.
 *
 * @mechanisms cms
 */
public class CmsEncoder @JvmOverloads constructor(
    override val spec: Spec,
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val sketch = SketchParameters(spec)
    private val q = Fraction.ONE - sketch.p
    private val full = Lanes.fullWords(sketch.m)
    private val sampler = RunSampler(sketch.m, listOf(sketch.p, q))
    private val bits = ReportBits.reader(source)

    override fun encode(value: Any): Report {
        val m = sketch.m
        val row = sketch.rows.draw(bits).toInt()
        val i = sketch.position(value, row)
        val oneHot = Lanes.oneLane(i, m)
        val others = full.copyOf()
        others[i ushr 6] = others[i ushr 6] xor oneHot[i ushr 6]
        val lanes = sampler.sample(arrayOf(oneHot, others), bits)
        return Report(spec.fingerprint, bits = Packing.wordsToPacked(lanes, m), extra = listOf("row" to row.toLong()))
    }
}

/**
 * Apple's Hadamard Count-Mean Sketch (the port of `HCMSEncoder` of `js/src/sketch.ts`): row
 * j = uniform(k), column l = uniform(m), keep = coin(p) (on the source's bits), and the bit is 1 when keep
 * equals "H_m[l, h_j(x)] = +1" (popcount(l & h_j(x)) even). The report carries `row`, `column`, `bit`.
 *
 * @mechanisms hcms
 */
public class HcmsEncoder @JvmOverloads constructor(
    override val spec: Spec,
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val sketch = SketchParameters(spec)
    private val columns = ReportBits.uniformTable(sketch.m.toLong())
    private val coin = ReportBits.coinTable(sketch.p)
    private val bits = ReportBits.reader(source)

    init {
        if (sketch.m and (sketch.m - 1) != 0) throw SpecException("hcms needs m a power of 2 (the Hadamard matrix H_m), got m=${sketch.m}")
    }

    override fun encode(value: Any): Report {
        val row = sketch.rows.draw(bits).toInt()
        val column = columns.draw(bits).toInt()
        val plus = Integer.bitCount(column and sketch.position(value, row)) and 1 == 0
        val keep = coin.flip(bits)
        val bit = if (plus == keep) 1L else 0L
        return Report(spec.fingerprint, extra = listOf("row" to row.toLong(), "column" to column.toLong(), "bit" to bit))
    }
}
