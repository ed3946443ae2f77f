package dev.ldp.client.mechanisms

import dev.ldp.client.BouncyCastleShake256
import dev.ldp.client.ByteSource
import dev.ldp.client.Bytes
import dev.ldp.client.ClientState
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Exact
import dev.ldp.client.FixedSource
import dev.ldp.client.Json
import dev.ldp.client.Packing
import dev.ldp.client.PrivacyRegistry
import dev.ldp.client.Registry
import dev.ldp.client.Shake256
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.ValueException
import dev.ldp.client.Vectors
import dev.ldp.client.hex
import dev.ldp.client.ints
import dev.ldp.client.prfInput
import dev.ldp.client.str
import dev.ldp.client.state.ClientStates
import dev.ldp.client.state.InMemoryStateStorage
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertNotNull
import kotlin.test.assertNull
import kotlin.test.assertTrue

/** RAPPOR: the `prr` vectors (true bits, memo keys, PRF input and stream, permanent response); `encodings` run in VectorsTest. */
class RapporTest {
    /** A SHAKE-256 recording the sizes of the reads made from each stream. */
    private class RecordingShake : Shake256 {
        val reads = ArrayList<Int>()

        override fun stream(input: ByteArray): ByteSource {
            val inner = BouncyCastleShake256.stream(input)
            return ByteSource { n -> reads.add(n).let { inner.read(n) } }
        }
    }

    private fun client(c: Map<String, Any?>) = ClientState(c.hex("secret"), (c["cohort"] as BigInteger).toLong())

    @TestFactory
    fun prr(): List<DynamicTest> = Vectors.cases("prr").map { c ->
        DynamicTest.dynamicTest("${c.str("spec")} cohort ${c["cohort"]} ${Json.dump(c["value"])}") {
            val spec = Vectors.specs.getValue(c.str("spec"))
            assertEquals(c.str("fingerprint"), spec.fingerprint)
            val shake = RecordingShake()
            val encoder = RapporEncoder(spec, client(c), FixedSource(ByteArray(0)), shake)
            val value = c["value"]!!
            val width = spec.intValue("num_bits")
            assertEquals(c.ints("true_positions"), encoder.truePositions(value).toList())
            assertEquals(c.str("true_bits"), Bytes.toHex(Packing.positionsToPacked(c.ints("true_positions"), width)))
            assertEquals(c.str("memo_key"), Bytes.toHex(encoder.memoKey(value)))
            assertEquals(c.str("prr_bits"), Bytes.toHex(encoder.permanentBits(value)))
            if (c.containsKey("prf_parts")) {
                val parts = encoder.prfParts(value)
                assertEquals(c["prf_parts"], parts.map { Bytes.toHex(it) })
                assertEquals(c.str("prf_input"), Bytes.toHex(prfInput(*parts.toTypedArray())))
                assertEquals(c.ints("prf_reads"), shake.reads, "the lane sampler's reads of the PRF stream")
                val stream = BouncyCastleShake256.stream(prfInput(*parts.toTypedArray()))
                assertEquals(c.str("prf_bytes"), Bytes.toHex(stream.read(c.ints("prf_reads").sum())))
            } else {
                assertEquals("0", spec.fields["f"], "only f = 0 has no PRF")
                assertEquals(emptyList<Int>(), shake.reads)
            }
        }
    }

    @Test
    fun everyRapporEncodingIsCoveredWithItsClient() {
        val cases = Vectors.cases("encodings").filter { it.str("spec").startsWith("rappor/") }
        assertTrue(cases.size >= 5)
        for (c in cases) {
            val spec = Vectors.specs.getValue(c.str("spec"))
            val source = FixedSource(c.hex("bytes"))
            val report = Registry.makeEncoder(spec, EncoderOptions(source = source, client = client(c))).encode(c["value"]!!)
            assertEquals(c.str("report_json"), report.toJson())
            assertEquals(c.ints("reads"), source.reads)
        }
    }

    private fun spec(id: String): Spec = Vectors.specs.getValue(id)

    @Test
    fun twoSpellingsOfOneValueShareTheirPermanentResponse() {
        val secret = ByteArray(32) { (it * 7).toByte() }
        val basic = RapporEncoder(spec("rappor/basic"), ClientState(secret, 0))
        val domain = spec("rappor/basic").domain()
        val integer = domain.firstOrNull { it is BigInteger }
        if (integer != null) assertContentEquals(basic.permanentBits(integer), basic.permanentBits(integer.toString()))
        val boolean = RapporEncoder(spec("rappor/boolean"), ClientState(secret, 0))
        for (yes in listOf(true, 1, " Yes ", "t", 1.0)) assertContentEquals(boolean.permanentBits(true), boolean.permanentBits(yes), "$yes")
        for (no in listOf(false, 0, "no", "F")) assertContentEquals(boolean.memoKey(false), boolean.memoKey(no), "$no")
        assertEquals(
            "not a boolean: \"maybe\"",
            assertFailsWith<ValueException> { boolean.encode("maybe") }.message,
        )
        assertFailsWith<ValueException> { boolean.encode(2) }
    }

    @Test
    fun theClientMustFitTheSpec() {
        val s = spec("rappor/mmh3")
        val cohorts = ClientState.cohortsOf(s).toLong()
        val e = assertFailsWith<SpecException> { RapporEncoder(s, ClientState(ByteArray(32), cohorts)) }
        assertEquals("cohort must be in [0, $cohorts), got $cohorts", e.message)
    }

    @Test
    fun aPersistentClientGivesTheSamePermanentResponseAfterARestart() {
        val s = spec("rappor/mmh3")
        val storage = InMemoryStateStorage()
        val first = RapporEncoder(s, ClientStates.open(storage, "device-1", s))
        val again = RapporEncoder(s, ClientStates.open(storage, "device-1", s))
        assertContentEquals(first.permanentBits("hello"), again.permanentBits("hello"))
        assertTrue(first.client.cohort < ClientState.cohortsOf(s).toLong())
        // without a client, makeEncoder draws a fresh one (a new secret each time)
        assertNotNull(Registry.makeEncoder(s).encode("hello").cohort)
    }

    @Test
    fun privacyFactsAndDerivedFields() {
        val bloom = PrivacyRegistry.mechanismPrivacy(spec("rappor/mmh3").fields)!!
        assertTrue(bloom.memoized && bloom.memoLinear)
        assertNull(bloom.memoValues, "a Bloom filter memoizes unboundedly many values")
        val basic = PrivacyRegistry.mechanismPrivacy(spec("rappor/basic").fields)!!
        assertEquals(BigInteger.valueOf(spec("rappor/basic").domain().size.toLong()), basic.memoValues)
        assertEquals(BigInteger.valueOf(2), PrivacyRegistry.mechanismPrivacy(spec("rappor/boolean").fields)!!.memoValues)
        assertEquals("none", spec("rappor/boolean").fields["hash"])
        assertEquals(BigInteger.ONE, spec("rappor/boolean").fields["num_bits"])
        assertNull(PrivacyRegistry.mechanismPrivacy(spec("rappor/one-time").fields)!!.permanentRatio, "f = 0: unbounded")
        val noDomain = assertFailsWith<SpecException> {
            Spec.load("""{"mechanism":"rappor","encoding":"basic","f":"1/2","p":"1/4","q":"3/4"}""")
        }
        assertEquals("rappor with encoding='basic' needs a domain", noDomain.message)
        val certain = assertFailsWith<SpecException> {
            Spec.load("""{"mechanism":"rappor","num_bits":8,"num_hashes":2,"f":"0","p":"0","q":"1/2"}""")
        }
        assertTrue(certain.message!!.startsWith("rappor parameters give no single-report privacy"), certain.message)
    }

    @Test
    fun budgetRapporEpsilonsFromThePrivacyFacts() {
        val cases = Vectors.list(Vectors.section("budget"), "rappor_epsilons")
        assertEquals(Vectors.specs.values.count { it.mechanism == "rappor" }, cases.size)
        for (c in cases) {
            val facts = PrivacyRegistry.mechanismPrivacy(spec(c.str("spec")).fields)!!
            assertEquals(c["epsilon_one"], Exact.epsilonBoundOfRatio(facts.ratio!!), c.str("spec"))
            assertEquals(c["epsilon_inf"], facts.permanentRatio?.let { Exact.epsilonBoundOfRatio(it) }, c.str("spec"))
            assertEquals(c["values"], facts.memoValues, c.str("spec"))
        }
    }
}
