package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.BouncyCastleShake256
import dev.ldp.client.Bytes
import dev.ldp.client.ClientState
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Fraction
import dev.ldp.client.BitReader
import dev.ldp.client.LaneSampler
import dev.ldp.client.RunSampler
import dev.ldp.client.Lanes
import dev.ldp.client.LdpException
import dev.ldp.client.Packing
import dev.ldp.client.RandomizedResponse
import dev.ldp.client.Report
import dev.ldp.client.Shake256
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.prfInput
import java.math.BigInteger

/**
 * The longitudinal chains (the port of `js/src/longitudinal.ts`): a memoized first round at ε∞ and a
 * fresh second round, one report ε₁-LDP (docs/longitudinal/chains.md). L-GRR is randomized response
 * in both rounds; the unary chains L-OSUE, L-OUE, L-SUE memoize each bit of a one-hot vector, then
 * randomize each bit afresh.
 *
 * The memo is derived, never stored: its coins are the bytes of SHAKE-256 over (label, client secret,
 * spec fingerprint, memo key), label `ldp-<mechanism>-memo-v1`, fed to the same exact samplers as
 * fresh coins, so the client's state is its 32-byte secret (keep it, as a RAPPOR client's; a chain has
 * no cohorts). The second round's coins are fresh: Knuth–Yao walks and lanes as runs on the bits of
 * `source` ([dev.ldp.client.ReportBits]). Bytes are consumed exactly as the Python client
 * (`ldp/client/longitudinal.py`) consumes them.
 *
 * @mechanisms l-grr l-osue l-oue l-sue
 */
public class LongitudinalEncoder @JvmOverloads constructor(
    override val spec: Spec,
    /** The client's state: its secret keys the memo (its cohort is unused). */
    public val client: ClientState,
    private val source: ByteSource = ByteSources.secure,
    private val shake: Shake256 = BouncyCastleShake256,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val unary = spec.mechanism != "l-grr"
    private val label = Bytes.utf8("ldp-${spec.mechanism}-memo-v1")
    private val secret = client.secret
    private val fingerprint = Bytes.utf8(spec.fingerprint)
    private val p1 = spec.fraction("p1")
    private val q1 = spec.fraction("q1")
    private val p2 = spec.fraction("p2")
    private val q2 = spec.fraction("q2")
    private val full = Lanes.fullWords(index.size)
    private val first: RandomizedResponse?
    private val second: RandomizedResponse?
    private val memoSampler: LaneSampler? // unary: the memo, p1 on the value's bit, q1 elsewhere
    private val reportSampler: RunSampler? // unary: the report, fresh, p2 where the memo is 1, q2 where 0
    private val bits = ReportBits.reader(source)

    init {
        for (p in listOf(p1, q1, p2, q2)) {
            if (p.num.signum() <= 0 || p >= Fraction.ONE) throw SpecException("${spec.mechanism} probabilities must be in (0, 1)")
        }
        if (unary) {
            first = null
            second = null
            memoSampler = LaneSampler(index.size, listOf(p1, q1))
            reportSampler = RunSampler(index.size, listOf(p2, q2))
        } else {
            memoSampler = null
            reportSampler = null
            val k = BigInteger.valueOf(index.size.toLong())
            first = RandomizedResponse(p1, k)
            second = RandomizedResponse(p2, k)
        }
    }

    /** The value's identity for memoization: its domain index as decimal text (two spellings share it). */
    override fun memoKey(value: Any): ByteArray = Bytes.utf8(index.indexOf(value).toString())

    /** The keyed PRF stream of a memo. */
    private fun memoStream(i: Int): ByteSource = shake.stream(prfInput(label, secret, fingerprint, Bytes.utf8(i.toString())))

    /** L-GRR: the memoized domain index of `value` (randomized response at ε∞ from the PRF). */
    public fun memoIndex(value: Any): Int {
        val rr = first ?: throw LdpException("${spec.mechanism} memoizes bits, not an index: use memoWords")
        val i = index.indexOf(value)
        return rr.respond(i, memoStream(i))
    }

    /** The unary chains: the memoized bits of `value` as 64-bit words (lane i = domain value i). */
    public fun memoWords(value: Any): LongArray {
        if (!unary) throw LdpException("${spec.mechanism} memoizes an index, not bits: use memoIndex")
        val i = index.indexOf(value)
        val oneHot = Lanes.oneLane(i, index.size)
        val others = full.copyOf()
        others[i ushr 6] = others[i ushr 6] xor oneHot[i ushr 6]
        return memoSampler!!.sample(arrayOf(oneHot, others), memoStream(i))
    }

    override fun encode(value: Any): Report {
        if (!unary) {
            val reported = second!!.respond(memoIndex(value), bits)
            return Report(spec.fingerprint, value = index.domain[reported])
        }
        val memo = memoWords(value)
        val off = LongArray(memo.size) { full[it] xor memo[it] }
        val lanes = reportSampler!!.sample(arrayOf(memo, off), bits)
        return Report(spec.fingerprint, bits = Packing.wordsToPacked(lanes, index.size))
    }

    public companion object {
        /** The encoder [dev.ldp.client.Registry.makeEncoder] gives: the options' client (a fresh one when null: a CSPRNG secret, cohort 0) and SHAKE-256. */
        @JvmStatic
        public fun create(spec: Spec, source: ByteSource, options: EncoderOptions): Encoder =
            LongitudinalEncoder(spec, options.client ?: ClientState(source.read(32), 0), source, options.shake)
    }
}
