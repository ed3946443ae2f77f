package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.BitReader
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.Fraction
import dev.ldp.client.KnuthYao
import dev.ldp.client.Report
import dev.ldp.client.Spec
import java.math.BigInteger

/**
 * The rows of the Sylvester Hadamard matrix H_b (entry (r, c) = (−1)^popcount(r & c)), as Hadamard
 * response reads them (the port of `rowPosition` of `js/src/hadamard.ts`).
 */
public object HadamardRows {
    /** The j-th position (j in [0, b/2)) of row `row` ≥ 1 of H_b whose entry is +1 (`plus`) or −1, in increasing order. */
    @JvmStatic
    public fun rowPosition(row: Int, j: Int, plus: Boolean): Int {
        require(row >= 1 && j >= 0) { "rowPosition needs row >= 1 and j >= 0, got row=$row, j=$j" }
        val low = row and -row // the row's lowest set bit
        val base = ((j and (low - 1).inv()) shl 1) or (j and (low - 1)) // j with a 0 inserted at that bit
        val parity = (Integer.bitCount(row and base) and 1) xor (if (plus) 0 else 1)
        return if (parity != 0) base or low else base
    }
}

/**
 * Hadamard response (the port of `js/src/hadamard.ts`): one output y in [0, K) per value, K = B·b,
 * from one Knuth–Yao walk on the source's bits over two groups: the members of C_x and the rest.
 *
 * Layout ([HrLayout]): B = `blocks` blocks of b outputs, b the smallest power of two with
 * B·(b − 1) ≥ d; index x sits in block ⌊x/(b − 1)⌋ at row (x mod (b − 1)) + 1 of H_b. C_x, the row's
 * b/2 "+1" positions inside x's block, has probability 2p/b each; every other output (1 − p)/(K − b/2).
 * The walk over [(b/2, 2p/b), (K − b/2, (1 − p)/(K − b/2))] picks a member of C_x (group 0) or of its
 * complement (group 1): the row's b/2 "−1" positions, then the outputs of the other blocks in order.
 *
 * @mechanisms hr
 */
public class HadamardEncoder @JvmOverloads constructor(
    override val spec: Spec,
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val blockSize: Int
    private val bits = ReportBits.reader(source)
    private val walk: KnuthYao

    init {
        val blocks = spec.intValue("blocks")
        blockSize = HrLayout.blockSize(index.size, blocks)
        val outputs = blocks.toLong() * blockSize
        val p = spec.fraction("p")
        val half = BigInteger.valueOf((blockSize / 2).toLong())
        val inside = Fraction.of(TWO * p.num, p.den * BigInteger.valueOf(blockSize.toLong())) // each member of C_x: 2p/b
        val outside = (Fraction.ONE - p).divInt(BigInteger.valueOf(outputs) - half) // each other output
        walk = KnuthYao(listOf(blockSize / 2L, outputs - blockSize / 2), listOf(inside, outside))
    }

    override fun encode(value: Any): Report {
        val x = index.indexOf(value)
        val b = blockSize
        val half = b / 2
        val block = x / (b - 1)
        val row = x % (b - 1) + 1
        val member = LongArray(1)
        val group = synchronized(bits) { walk.walk(bits, member) }
        val output: Long = if (group == 0) {
            block.toLong() * b + HadamardRows.rowPosition(row, member[0].toInt(), true)
        } else {
            val u = member[0] // a member of the complement of C_x
            if (u < half) {
                block.toLong() * b + HadamardRows.rowPosition(row, u.toInt(), false)
            } else {
                val other = u - half // an output of the other blocks, x's block skipped
                if (other >= block.toLong() * b) other + b else other
            }
        }
        return Report(spec.fingerprint, value = BigInteger.valueOf(output))
    }
}

private val TWO: BigInteger = BigInteger.valueOf(2) // BigInteger.TWO is Java 9+, not on every Android
