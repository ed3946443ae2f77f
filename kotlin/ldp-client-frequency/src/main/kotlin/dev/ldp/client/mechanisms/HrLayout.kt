package dev.ldp.client.mechanisms

/**
 * Hadamard response's layout (the port of `js/src/hrlayout.ts`), shared by the encoder ([HadamardEncoder])
 * and the spec's privacy check (`hadamardPrivacy`).
 */
public object HrLayout {
    /**
     * b: the smallest power of two with blocks·(b − 1) ≥ d (the outputs of one block; index x sits in
     * block ⌊x/(b − 1)⌋).
     */
    @JvmStatic
    public fun blockSize(domainSize: Int, blocks: Int): Int {
        require(domainSize >= 1 && blocks >= 1) { "hr needs a domain size and a number of blocks of at least 1, got d=$domainSize, blocks=$blocks" }
        val need = (domainSize + blocks - 1) / blocks + 1 // ⌈d/B⌉ + 1
        var b = 1
        while (b < need) b *= 2
        return b
    }
}
