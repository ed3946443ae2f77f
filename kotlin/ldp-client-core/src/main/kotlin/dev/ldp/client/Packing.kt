package dev.ldp.client

import java.math.BigInteger

/**
 * Bit vectors (the port of `js/src/packing.ts`): bit i of an n-bit vector is bit 7 − (i mod 8) of byte
 * ⌊i/8⌋ (most significant bit first, as `numpy.packbits`), in ⌈n/8⌉ bytes. Samplers hold lane i as
 * bit i of a [BigInteger] or of 64-bit words (bit i % 64 of word ⌊i/64⌋).
 */
public object Packing {
    private val REVERSED = ByteArray(256) { b ->
        var r = 0
        for (i in 0 until 8) r = r or (((b shr i) and 1) shl (7 - i))
        r.toByte()
    }

    /** Pack lanes (bit i of `lanes` is lane i). */
    @JvmStatic
    public fun lanesToPacked(lanes: BigInteger, width: Int): ByteArray {
        val out = ByteArray((width + 7) / 8)
        for (i in out.indices) out[i] = REVERSED[lanes.shiftRight(8 * i).toInt() and 0xff]
        return out
    }

    /** Packed bytes of the given set bit positions (each in [0, width)). */
    @JvmStatic
    public fun positionsToPacked(positions: Iterable<Int>, width: Int): ByteArray {
        val out = ByteArray((width + 7) / 8)
        for (i in positions) {
            if (i < 0 || i >= width) fail("bit position $i outside [0, $width)")
            out[i shr 3] = (out[i shr 3].toInt() or (0x80 ushr (i and 7))).toByte()
        }
        return out
    }

    /** Pack lanes held as 64-bit words, as [lanesToPacked]. */
    @JvmStatic
    public fun wordsToPacked(words: LongArray, width: Int): ByteArray {
        val out = ByteArray((width + 7) / 8)
        for (i in out.indices) out[i] = REVERSED[((words[i ushr 3] ushr (8 * (i and 7))) and 0xff).toInt()]
        return out
    }
}
