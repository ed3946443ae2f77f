package dev.ldp.client.budget

import dev.ldp.client.Bytes
import dev.ldp.client.Exact
import dev.ldp.client.Fraction
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.FixedSource
import dev.ldp.client.Spec
import dev.ldp.client.ValueException
import dev.ldp.client.mechanisms.GrrEncoder
import dev.ldp.client.state.FileStateStorage
import dev.ldp.client.state.InMemoryStateStorage
import dev.ldp.client.state.StateException
import dev.ldp.client.state.StateKey
import org.junit.jupiter.api.io.TempDir
import java.math.BigInteger
import java.nio.file.Files
import java.nio.file.Path
import java.nio.file.attribute.PosixFilePermissions
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertNull
import kotlin.test.assertTrue

/** The ledger's rules beyond the vectors: budgets, the file format, memoized streams, the budgeted encoder. */
class BudgetTest {
    @TempDir
    lateinit var temp: Path

    private companion object {
        /** GRR at ε = 1 as the server writes it: each report costs exactly 1. */
        val GRR: Spec = Spec.load("""{"domain":["a","b","c"],"epsilon":1.0,"format":1,"mechanism":"grr","p":"10627480729818062551/18446744073709551616"}""")
        val KEY: StateKey = StateKey.ledger("alice")
        const val ONCE = "a budget is set once, when its ledger is created, and never changed; give the stored budget or none"

        /** What Python's `PrivacyLedger._to_json` writes (+ "\n") for key bytes(range(32)), budget ε=3, δ=1e-6, optimal, two GRR reports. */
        const val PYTHON_V1 = "{\n \"budget\": {\n  \"composition\": \"optimal\",\n  \"delta\": 1e-06,\n  \"epsilon\": 3.0\n },\n" +
            " \"format\": \"ldp-privacy-ledger/1\",\n \"key\": \"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\",\n" +
            " \"streams\": {\n  \"fresh:72400d1570b02139\": {\n   \"epsilon\": 1.0,\n   \"epsilon_cap\": null,\n   \"memoized\": false,\n" +
            "   \"reports\": 2,\n   \"spec\": \"72400d1570b02139\",\n   \"values\": null\n  }\n }\n}\n"

        /** The same with a memoized stream that is not linear and has epsilon_first, as Python writes it (version 2). */
        const val PYTHON_V2 = "{\n \"budget\": {\n  \"composition\": \"optimal\",\n  \"delta\": 1e-06,\n  \"epsilon\": 3.0\n },\n" +
            " \"format\": \"ldp-privacy-ledger/2\",\n \"key\": \"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\",\n" +
            " \"streams\": {\n  \"fresh:72400d1570b02139\": {\n   \"epsilon\": 1.0,\n   \"epsilon_cap\": null,\n   \"linear\": true,\n" +
            "   \"memoized\": false,\n   \"reports\": 2,\n   \"spec\": \"72400d1570b02139\",\n   \"values\": null\n  },\n" +
            "  \"value:1111111111111111111111111111111111111111111111111111111111111111\": {\n   \"epsilon\": 0.5,\n" +
            "   \"epsilon_cap\": 1.75,\n   \"epsilon_first\": 0.25,\n   \"linear\": false,\n   \"memoized\": true,\n" +
            "   \"reports\": 2,\n   \"spec\": \"0123456789abcdef\",\n   \"values\": 4\n  }\n }\n}\n"

        /** HMAC-SHA256 (Python's hmac) of "0123456789abcdef" ‖ 0 ‖ 01 02 under bytes(range(32)). */
        const val PYTHON_STREAM = "value:58e5924985f8a24ea291628b3cdeca5b0ecc5a27f3d0f27819da6e32082c35a9"

        fun storageWith(text: String): InMemoryStateStorage = InMemoryStateStorage().also { it.put(KEY, text.toByteArray(Charsets.UTF_8)) }

        fun text(storage: InMemoryStateStorage): String = String(storage.get(KEY)!!, Charsets.UTF_8)
    }

    @Test
    fun budgetsAreCheckedAndPrintedAsPythonPrintsThem() {
        assertEquals(CompositionRule.OPTIMAL, Budget(1.0, 1e-6, "Optimal").composition)
        assertEquals("epsilon=1.0, delta=1e-06, optimal composition", Budget(1.0, 1e-6, "optimal").text())
        assertEquals("epsilon=3.0", Budget(3.0).text())
        assertTrue(assertFailsWith<AccountingException> { Budget(1.0, 0.0, "advanced") }.message!!.contains("basic, optimal"))
        assertTrue(assertFailsWith<AccountingException> { Budget(1.0, 0.0, "exact") }.message!!.contains("Python client"))
        assertFailsWith<AccountingException> { Budget(0.0) }
        assertFailsWith<AccountingException> { Budget(Double.POSITIVE_INFINITY) }
        assertFailsWith<AccountingException> { Budget(1.0, 1.0) }
        assertFailsWith<AccountingException> { Budget(1.0, -1e-9) }
    }

    @Test
    fun fsumIsExactlyRounded() {
        assertEquals(1.0, Composition.fsum(List(10) { 0.1 }))
        assertEquals(1.0, Composition.fsum(listOf(1e100, 1.0, -1e100)))
        assertEquals(0.0, Composition.fsum(emptyList()))
        assertEquals(Double.POSITIVE_INFINITY, Composition.fsum(listOf(1.0, Double.POSITIVE_INFINITY)))
        // the half-way case of CPython's msum: 1 + 2^-53 + 2^-106 rounds up
        assertEquals(Math.nextUp(1.0), Composition.fsum(listOf(1.0, Math.pow(2.0, -53.0), Math.pow(2.0, -106.0))))
    }

    @Test
    fun messagesWritePythonsSixSignificantDigits() {
        assertEquals("3", PrivacyLedger.g6(3.0))
        assertEquals("0.1", PrivacyLedger.g6(0.1))
        assertEquals("1.00001", PrivacyLedger.g6(1.000005000001))
        assertEquals("2.0433", PrivacyLedger.g6(2.0433024950639638))
        assertEquals("1e+06", PrivacyLedger.g6(1e6))
        assertEquals("123457", PrivacyLedger.g6(123456.7))
        assertEquals("1.5e-05", PrivacyLedger.g6(1.5e-5))
        assertEquals("0.0001", PrivacyLedger.g6(1e-4))
        assertEquals("inf", PrivacyLedger.g6(Double.POSITIVE_INFINITY))
    }

    @Test
    fun latticeConvolutionAndTheLazyProductAgreeWithTheFullProduct() {
        // eps 0.1 (30 reports) and 0.2 (21): both lattices of step 0.2, 651 atoms in the product
        val pieces = DoubleArray(51) { if (it < 30) 0.1 else 0.2 }
        val full = Composition.heterogeneousComposition(pieces, Composition.DEFAULT_MAX_ATOMS)!!
        val lattice = Composition.heterogeneousComposition(pieces, 10)!!
        assertTrue(full is PrivacyLoss && lattice is PrivacyLoss)
        val lazy = ProductLoss(PrivacyLoss.binomial(0.1, 30), PrivacyLoss.binomial(0.2, 21))
        for (delta in listOf(1e-3, 1e-6, 1e-9)) {
            val expected = Composition.lossEpsilon(full, delta)
            for (other in listOf(lattice, lazy)) {
                val got = Composition.lossEpsilon(other, delta)
                assertTrue(Math.abs(got - expected) <= 1e-9 * expected, "$other at $delta: $got vs $expected")
            }
        }
        // a third factor after a lazy product: KOV's bound, never above the sum
        val three = DoubleArray(4) { listOf(0.1, 0.2, 0.3, 0.4)[it] }
        assertEquals(null, Composition.heterogeneousComposition(three, 1))
    }

    @Test
    fun ledgerFilesAreWrittenByteForByteAsPythonWritesThem() {
        val storage = InMemoryStateStorage()
        val ledger = PrivacyLedger(storage, KEY, Budget(3.0, 1e-6, CompositionRule.OPTIMAL))
        ledger.charge(GRR, null)
        ledger.charge(GRR, null)
        val written = LedgerFile.parse(storage.get(KEY)!!, "ledger")
        val withPythonKey = LedgerData(ByteArray(32) { it.toByte() }, written.budget, written.streams)
        assertEquals(PYTHON_V1, String(LedgerFile.write(withPythonKey), Charsets.UTF_8))
        // Python's files are read and written back unchanged, version 1 and 2
        for (text in listOf(PYTHON_V1, PYTHON_V2)) {
            assertEquals(text, String(LedgerFile.write(LedgerFile.parse(text.toByteArray(), "ledger")), Charsets.UTF_8))
        }
    }

    @Test
    fun privacyLossAtomsAPythonLedgerRecordedAreKeptThroughCharges() {
        val loss = "   \"loss\": {\n    \"log_p\": [\n     -0.3132616875182228,\n     -1.3132616875182228\n    ],\n" +
            "    \"log_q\": [\n     -1.3132616875182228,\n     -0.3132616875182228\n    ]\n   },\n"
        val text = PYTHON_V2.replace("   \"linear\": true,\n", "   \"linear\": true,\n$loss").replace("\"epsilon\": 3.0", "\"epsilon\": 10.0")
        assertEquals(text, String(LedgerFile.write(LedgerFile.parse(text.toByteArray(), "ledger")), Charsets.UTF_8))
        val storage = storageWith(text)
        PrivacyLedger.open(storage, KEY)!!.charge(GRR, null)
        assertEquals(text.replace("\"reports\": 2,\n   \"spec\": \"72400d1570b02139\"", "\"reports\": 3,\n   \"spec\": \"72400d1570b02139\""), text(storage))
        // atoms that are not a distribution are refused
        val bad = text.replace("-0.3132616875182228,\n     -1.3132616875182228", "-0.3132616875182228,\n     -0.3132616875182228")
        assertFailsWith<StateException> { PrivacyLedger.open(storageWith(bad), KEY) }
    }

    @Test
    fun aStreamThatIsNotLinearKeepsTheFileAtVersion2AndTheLastOneBringsItBackToVersion1() {
        val storage = storageWith(PYTHON_V2.replace("\"epsilon\": 3.0", "\"epsilon\": 10.0"))
        val ledger = PrivacyLedger.open(storage, KEY)!!
        assertEquals(Budget(10.0, 1e-6, "optimal"), ledger.budget)
        ledger.charge(GRR, null)
        assertTrue(text(storage).contains("\"format\": \"ldp-privacy-ledger/2\""))
        assertEquals(2, Regex("\"linear\": ").findAll(text(storage)).count())
        // version 1 never has linear; a version-1 file with it was not written by any ldp
        val v1 = storageWith(PYTHON_V1)
        PrivacyLedger.open(v1, KEY)!!.charge(GRR, null)
        assertTrue(text(v1).contains("\"format\": \"ldp-privacy-ledger/1\"") && !text(v1).contains("linear"))
        val bad = storageWith(PYTHON_V1.replace("\"memoized\": false,", "\"linear\": true,\n   \"memoized\": false,"))
        assertTrue(assertFailsWith<StateException> { PrivacyLedger.open(bad, KEY) }.message!!.endsWith("is corrupt: missing or malformed fields"))
    }

    @Test
    fun memoizedStreamsAreNamedByHmacSha256UnderTheLedgersKeyAsPythonNamesThem() {
        val storage = storageWith(PYTHON_V1.replace("\"optimal\"", "\"basic\"").replace("1e-06", "0.0"))
        val ledger = PrivacyLedger.open(storage, KEY)!!
        // a linear memoized spec (RAPPOR's rule): r reports of one key cost min(r·0.5, 1.75), 2 keys
        val params = StreamParameters(0.5, 1.75, true, BigInteger.valueOf(2), linear = true)
        ledger.chargeStream("0123456789abcdef", "rappor", params, byteArrayOf(1, 2))
        ledger.chargeStream("0123456789abcdef", "rappor", params, byteArrayOf(1, 2))
        val streams = ledger.streams()
        assertEquals(2L, streams.getValue(PYTHON_STREAM).reports)
        assertTrue(text(storage).contains("\"format\": \"ldp-privacy-ledger/1\""), "linear memoized streams stay in version 1")
        assertFalse(text(storage).contains(Bytes.toHex(byteArrayOf(1, 2)) + "\""), "the ledger holds no memo key")
        // spent: 2 GRR reports + min(2·0.5, 1.75) = 3; committed: 2 + worst case of 2 reports over 2 keys (0.5 + 0.5) = 3
        assertEquals(3.0, ledger.spent())
        assertEquals(3.0, ledger.committed())
        // a third report (any key) would commit 2 + worst(3 over 2 keys) = 2 + 1.0 + 0.5 > 3: refused whatever the key
        for (memoKey in listOf(byteArrayOf(1, 2), byteArrayOf(9))) {
            val e = assertFailsWith<BudgetExceededException> { ledger.chargeStream("0123456789abcdef", "rappor", params, memoKey) }
            assertEquals(
                "this report would bring the privacy committed to epsilon=3.5, over the budget epsilon=3 (basic composition); " +
                    "already committed 3. Nothing was sent or recorded.",
                e.message,
            )
        }
        assertEquals(2L, ledger.streams().getValue(PYTHON_STREAM).reports, "nothing was recorded")
    }

    @Test
    fun aNonLinearChainIsChargedItsFirstReportThenEpsilonInfinityAndWrittenAsVersion2() {
        val storage = InMemoryStateStorage()
        val ledger = PrivacyLedger(storage, KEY, Budget(10.0))
        // ε′ = 0.32 per report, ε₁ = 0.25 for a key's first, ε∞ = 1, not linear, 16 keys
        val params = StreamParameters(0.32, 1.0, true, BigInteger.valueOf(16), linear = false, epsilonFirst = 0.25)
        assertEquals(0.25, ledger.chargeStream("fedcba9876543210", "l-grr", params, byteArrayOf(7)))
        assertEquals(0.25, ledger.committed())
        assertTrue(text(storage).contains("\"format\": \"ldp-privacy-ledger/2\"") && text(storage).contains("\"linear\": false"))
        assertTrue(text(storage).contains("\"epsilon_first\": 0.25"))
        // the same key again: ε∞ (not 2·ε′); committed: the worst spread of 2 reports, both on one key
        assertEquals(1.0, ledger.chargeStream("fedcba9876543210", "l-grr", params, byteArrayOf(7)))
        assertEquals(1.0, ledger.committed())
        // another key: spent 1 + 0.25; committed: the worst spread of 3 reports over 16 keys (2 + 1: 1 + 0.25)
        assertEquals(1.25, ledger.chargeStream("fedcba9876543210", "l-grr", params, byteArrayOf(8)))
        assertEquals(1.25, ledger.committed())
    }

    @Test
    fun aLedgerThatIsReplacedOrDisappearsIsRefusedNeverRecreated() {
        val storage = FileStateStorage(temp.resolve("state"))
        val ledger = PrivacyLedger.open(storage, KEY, Budget(5.0))!!
        ledger.charge(GRR, null)
        val file = storage.fileOf(KEY)
        val saved = Files.readAllBytes(file)
        // another ledger (another key) with the same budget put in its place
        storage.put(KEY, PYTHON_V1.replace("optimal", "basic").replace("1e-06", "0.0").replace("3.0", "5.0").toByteArray())
        val replaced = assertFailsWith<StateException> { ledger.charge(GRR, null) }.message!!
        assertEquals("privacy ledger '$file' was replaced by another ledger while open", replaced)
        storage.put(KEY, saved)
        assertEquals(2.0, ledger.charge(GRR, null))
        Files.delete(file)
        val gone = assertFailsWith<StateException> { ledger.charge(GRR, null) }.message!!
        assertEquals("privacy ledger '$file' has disappeared; it is never recreated silently (that would reset the budget)", gone)
        assertFalse(Files.exists(file))
        // a new object on no ledger: 0 committed, nothing created until its first charge
        val fresh = PrivacyLedger(storage, KEY, Budget(5.0))
        assertEquals(0.0, fresh.committed())
        assertFalse(Files.exists(file))
    }

    @Test
    fun theBudgetIsSetOnceWhenTheLedgerIsCreated() {
        val storage = InMemoryStateStorage()
        assertNull(PrivacyLedger.open(storage, KEY))
        assertNull(storage.get(KEY), "no budget: nothing created")
        val ledger = PrivacyLedger.open(storage, KEY, Budget(2.0))!!
        ledger.charge(GRR, null)
        val reopened = PrivacyLedger.open(storage, KEY)!!
        assertEquals(Budget(2.0), reopened.budget)
        reopened.charge(GRR, null)
        assertFailsWith<BudgetExceededException> { reopened.charge(GRR, null) }
        val other = assertFailsWith<StateException> { PrivacyLedger.open(storage, KEY, Budget(3.0)) }
        assertEquals("privacy ledger of client 'alice' holds the budget epsilon=2.0, not epsilon=3.0: $ONCE (it is enforced either way)", other.message)
        // a ledger object built with another budget is refused at its first use, with the same message
        val built = assertFailsWith<StateException> { PrivacyLedger(storage, KEY, Budget(3.0)).charge(GRR, null) }
        assertEquals(other.message, built.message)
        assertEquals(2.0, reopened.committed())
    }

    @Test
    fun exactAndMuBudgetsAndCorruptFilesAreRefusedWithOneLine() {
        val exact = storageWith(PYTHON_V2.replace("\"optimal\"", "\"exact\""))
        val e = assertFailsWith<StateException> { PrivacyLedger.open(exact, KEY) }
        assertEquals(
            "privacy ledger of client 'alice' holds a budget composed by the mechanisms' exact curves (exact composition), " +
                "which this client does not compute yet; charge it with the Python client",
            e.message,
        )
        for ((text, why) in listOf(
            "{not json" to "is corrupt or truncated (not valid JSON); it was left untouched",
            "{\"format\": \"ldp-client-state/1\"}" to "is not an ldp privacy ledger (format ldp-privacy-ledger/1 or ldp-privacy-ledger/2)",
            PYTHON_V1.replace("\"reports\": 2", "\"reports\": -1") to "is corrupt: missing or malformed fields",
            PYTHON_V1.replace("\"reports\": 2", "\"reports\": true") to "is corrupt: missing or malformed fields",
            PYTHON_V1.replace("000102", "zz0102") to "is corrupt: missing or malformed fields",
            PYTHON_V1.replace("\"epsilon\": 3.0", "\"epsilon\": -3.0") to "is corrupt: its budget epsilon must be a finite number > 0, got -3.0",
            PYTHON_V2.replace("\"epsilon_first\": 0.25", "\"epsilon_first\": 0.75") to "is corrupt: missing or malformed fields",
            PYTHON_V2.replace("\"linear\": false,", "") to "is corrupt: missing or malformed fields",
        )) {
            val message = assertFailsWith<StateException>(text) { PrivacyLedger.open(storageWith(text), KEY) }.message!!
            assertTrue(message.endsWith(why), message)
            assertFalse(message.contains('\n'))
        }
    }

    @Test
    fun theBudgetedEncoderChargesBeforeReleasingAndDropsTheReportWhenTheChargeFails() {
        val storage = FileStateStorage(temp.resolve("state"))
        val ledger = PrivacyLedger.open(storage, KEY, Budget(2.0))!!
        val encoder = BudgetedEncoder(GrrEncoder(GRR, FixedSource(ByteArray(64))), ledger)
        assertEquals(GRR, encoder.spec)
        assertEquals(GRR.fingerprint, encoder.encode("a").spec)
        // an invalid value fails in the encoder, before any charge
        assertFailsWith<ValueException> { encoder.encode("not-in-domain") }
        assertEquals(1.0, ledger.committed())
        encoder.encode("b")
        assertFailsWith<BudgetExceededException> { encoder.encode("c") }
        assertEquals(2.0, ledger.committed())
        // the file beside the client's state, as Python names it, private
        val file = storage.fileOf(KEY)
        assertTrue(file.fileName.toString().endsWith(".ledger.json"))
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
        val message = assertFailsWith<StateException> { PrivacyLedger.open(storage, KEY, Budget(9.0)) }.message!!
        assertTrue(message.startsWith("privacy ledger '$file' holds the budget epsilon=2.0, not epsilon=9.0"), message)
    }

    @Test
    fun streamParametersFollowPythonsRulesForEachKindOfSpec() {
        // an (ε, δ) mechanism is refused in one line: the ledger composes pure ε-DP reports
        val gaussian = mapOf("mechanism" to "gaussian", "epsilon" to 1.0, "delta" to 1e-5)
        val e = assertFailsWith<AccountingException> { Spending.streamParameters(gaussian, MechanismPrivacy.fresh(null)) }
        assertEquals("cannot account for gaussian: the ledger composes pure epsilon-DP reports, this spec is (epsilon, delta)-DP (delta=1e-05)", e.message)
        val fresh = Spending.streamParameters(GRR)
        assertTrue(!fresh.memoized && fresh.epsilon == 1.0 && fresh.epsilonCap == null)
        // a chain: ε₁ = 0.25 stated, charged ε′ = 0.32 per report (memoReportEpsilon), not linear, 16 keys
        val ratio = Fraction.of(BigInteger.valueOf(5), BigInteger.valueOf(4))
        val chainFacts = MechanismPrivacy.memoized(ratio, Fraction.of(BigInteger.valueOf(2)), BigInteger.valueOf(16)).copy(memoReportEpsilon = 0.32)
        val chain = Spending.streamParameters(mapOf("mechanism" to "l-grr", "epsilon" to 0.25, "epsilon_inf" to 0.69), chainFacts)
        assertEquals(listOf(0.32, 0.69, 0.25), listOf(chain.epsilon, chain.epsilonCap, chain.epsilonFirst))
        assertTrue(chain.memoized && !chain.linear && chain.values == BigInteger.valueOf(16))
        // RAPPOR states no ε: ln of the exact ratios rounded up to certified doubles; linear; f = 0: ε∞ unbounded
        val rapporFacts = MechanismPrivacy.memoized(Fraction.of(BigInteger.valueOf(3)), null, null).copy(memoLinear = true)
        val rappor = Spending.streamParameters(mapOf("mechanism" to "rappor"), rapporFacts)
        assertEquals(Exact.epsilonBoundOfRatio(Fraction.of(BigInteger.valueOf(3))), rappor.epsilon)
        assertTrue(Exact.ratioWithin(Fraction.of(BigInteger.valueOf(3)), rappor.epsilon) && rappor.epsilon >= Math.log(3.0))
        assertTrue(rappor.linear && rappor.epsilonCap == null && rappor.epsilonFirst == null && rappor.values == null)
        assertFailsWith<AccountingException> { Spending.memoizedEpsilons(GRR) }
    }

    @Test
    fun aClientWithALedgerIsNeverEncodedUnbudgeted() {
        val storage = FileStateStorage(temp.resolve("state"))
        val plain = GrrEncoder(GRR, FixedSource(ByteArray(64)))
        assertTrue(BudgetedEncoder.forClient(plain, storage, "alice") === plain, "no ledger and no budget: the encoder itself")
        assertFalse(Files.exists(storage.fileOf(KEY)), "and nothing is created")
        BudgetedEncoder.forClient(plain, storage, "alice", Budget(1.0)).encode("a")
        // without a budget, the stored one holds; for any spec of the client
        val again = BudgetedEncoder.forClient(plain, storage, "alice")
        assertTrue(again is BudgetedEncoder && again.ledger.budget == Budget(1.0))
        assertFailsWith<BudgetExceededException> { again.encode("a") }
        assertFailsWith<StateException> { BudgetedEncoder.forClient(plain, storage, "alice", Budget(2.0)) }
        assertTrue(BudgetedEncoder.forClient(plain, storage, "bob") === plain, "another client has no budget")
    }

    @Test
    fun aMemoizedSpecMustBeChargedWithItsMemoKeyAndAFreshSpecIgnoresOne() {
        val ledger = PrivacyLedger(InMemoryStateStorage(), KEY, Budget(5.0))
        val params = StreamParameters(0.5, 1.75, true, null)
        val e = assertFailsWith<AccountingException> { ledger.chargeStream("0123456789abcdef", "rappor", params, null) }
        assertEquals("rappor is memoized: a report is charged with its value's memo key (the encoder's memoKey)", e.message)
        assertEquals(0.0, ledger.committed())
        // fresh specs ignore a memo key: one stream per spec
        ledger.charge(GRR, byteArrayOf(1))
        ledger.charge(GRR, byteArrayOf(2))
        assertEquals(setOf("fresh:${GRR.fingerprint}"), ledger.streams().keys)
    }
}
