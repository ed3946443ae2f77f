package dev.ldp.client.bench

import dev.ldp.client.BouncyCastleShake256
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.ClientState
import dev.ldp.client.Encoder
import dev.ldp.client.Fraction
import dev.ldp.client.PooledSource
import dev.ldp.client.Samplers
import dev.ldp.client.Spec
import dev.ldp.client.WordLaneGroup
import dev.ldp.client.hashing.BloomHash
import dev.ldp.client.hashing.bloomPositions
import dev.ldp.client.mechanisms.GrrEncoder
import dev.ldp.client.mechanisms.HadamardEncoder
import dev.ldp.client.mechanisms.LocalHashingEncoder
import dev.ldp.client.mechanisms.RapporEncoder
import dev.ldp.client.mechanisms.SubsetEncoder
import dev.ldp.client.mechanisms.UnaryEncoder
import java.security.SecureRandom

/**
 * A plain timed harness of encoder throughput, per mechanism and per stage of a RAPPOR report, each
 * against a reference measured in the same run: the rate at which `SecureRandom.nextBytes` (through
 * a [PooledSource], as the encoders draw) serves the bytes one report draws. Rates are per CPU second
 * of the thread (per core: the machine may be shared). Not a unit test (no timing assertion
 * anywhere); run it with the test classpath (the third argument: `stages`, `mechanisms`, `all` or
 * the start of a case's name):
 *
 * ```
 * cd kotlin && mvn -B -q -o test-compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt
 * java -cp target/classes:target/test-classes:$(cat target/cp.txt) dev.ldp.client.bench.EncoderSpeed [seconds] [rounds]
 * ```
 *
 * Each case runs `rounds` times, alternating with its reference, and prints the median rate and the
 * median ratio (the ratio is what to compare across runs and machines: it cancels the load).
 */
object EncoderSpeed {
    private class Counting(val inner: ByteSource) : ByteSource {
        var bytes = 0L

        override fun read(n: Int): ByteArray {
            bytes += n
            return inner.read(n)
        }
    }

    private var sink = 0

    private val threads = java.lang.management.ManagementFactory.getThreadMXBean()

    /**
     * Calls per CPU second of this thread (the machine is shared: wall time would count the time
     * other processes hold the core) of [body], run for [seconds] of CPU time.
     */
    private fun rate(seconds: Double, body: () -> Any?): Double {
        var n = 0L
        val start = threads.currentThreadCpuTime
        val end = start + (seconds * 1e9).toLong()
        while (threads.currentThreadCpuTime < end) {
            repeat(256) { sink += body().hashCode() }
            n += 256
        }
        return n / ((threads.currentThreadCpuTime - start) / 1e9)
    }

    private fun median(xs: List<Double>): Double = xs.sorted()[xs.size / 2]

    private val domain1024 = (0 until 1024).joinToString(",")

    private fun spec(fields: String, domain: String? = null): Spec =
        Spec.load("{" + (if (domain != null) "\"domain\":[$domain]," else "") + fields + "}")

    /** The cases: a name and a factory of (encoder, value of the i-th call). */
    private fun cases(): List<Pair<String, (ByteSource) -> Pair<Encoder, (Int) -> Any>>> {
        val words = Array(1024) { "value-$it" }
        val ints = Array(1024) { it.toLong() }
        val rappor128 = spec("\"mechanism\":\"rappor\",\"num_bits\":128,\"num_hashes\":2,\"num_cohorts\":64,\"f\":\"1/2\",\"p\":\"1/2\",\"q\":\"3/4\"")
        val rappor32 = spec("\"mechanism\":\"rappor\",\"num_bits\":32,\"num_hashes\":2,\"num_cohorts\":64,\"hash\":\"md5\",\"f\":\"1/2\",\"p\":\"1/2\",\"q\":\"3/4\"")
        val rappor16 = spec("\"mechanism\":\"rappor\",\"num_bits\":16,\"num_hashes\":2,\"num_cohorts\":4,\"f\":\"1/2\",\"p\":\"1/4\",\"q\":\"3/4\"")
        val grr = spec("\"epsilon\":1.0,\"format\":1,\"mechanism\":\"grr\",\"p\":\"707510040974443917/4611686018427387904\"", (0 until 16).joinToString(","))
        val oue = spec("\"epsilon\":1.0,\"format\":1,\"mechanism\":\"oue\",\"p\":\"1/2\",\"q\":\"4961093570831984269/18446744073709551616\"", domain1024)
        val olh = spec("\"epsilon\":1.0,\"format\":1,\"g\":4,\"mechanism\":\"olh\",\"p\":\"4384485647440694613/9223372036854775808\"", domain1024)
        val hr = spec("\"blocks\":1,\"epsilon\":1.0,\"format\":1,\"mechanism\":\"hr\",\"p\":\"13485650502877567347/18446744073709551616\"", domain1024)
        val ss = spec("\"epsilon\":1.0,\"format\":1,\"mechanism\":\"ss\",\"omega\":275,\"p\":\"143973387001878083/288230376151711744\"", domain1024)
        return listOf(
            "grr d=16" to { s -> Pair(GrrEncoder(grr, s), { i: Int -> ints[i and 15] }) },
            "rappor k=128 h=2 mmh3" to { s -> Pair(RapporEncoder(rappor128, ClientState.create(rappor128), s), { i: Int -> words[i and 1023] }) },
            "rappor k=32 h=2 md5" to { s -> Pair(RapporEncoder(rappor32, ClientState.create(rappor32), s), { i: Int -> words[i and 1023] }) },
            "rappor k=16 h=2 mmh3" to { s -> Pair(RapporEncoder(rappor16, ClientState.create(rappor16), s), { i: Int -> words[i and 1023] }) },
            "oue d=1024" to { s -> Pair(UnaryEncoder(oue, s), { i: Int -> ints[i and 1023] }) },
            "olh d=1024 g=4" to { s -> Pair(LocalHashingEncoder(olh, s), { i: Int -> ints[i and 1023] }) },
            "hr d=1024" to { s -> Pair(HadamardEncoder(hr, s), { i: Int -> ints[i and 1023] }) },
            "ss d=1024 w=275" to { s -> Pair(SubsetEncoder(ss, s), { i: Int -> ints[i and 1023] }) },
        )
    }

    private fun mechanisms(seconds: Double, rounds: Int, only: String?) {
        println("| encoder | reports/s | CSPRNG bytes/report | nextBytes reference, reports/s | ratio |")
        println("|---|---:|---:|---:|---:|")
        for ((name, make) in cases()) {
            if (only != null && !name.startsWith(only)) continue
            val counting = Counting(ByteSources.secure)
            val (encoder, value) = make(counting)
            var i = 0
            rate(seconds) { encoder.encode(value(i++)).toJson() } // warm-up
            var c = 0L
            val rates = ArrayList<Double>()
            val refs = ArrayList<Double>()
            val ratios = ArrayList<Double>()
            var drawn = 0L
            repeat(rounds) {
                val before = counting.bytes
                val calls0 = i
                val r = rate(seconds) { encoder.encode(value(i++)).toJson() }
                val n = (i - calls0).toLong()
                drawn += counting.bytes - before
                c += n
                val each = Math.max(1, Math.round((counting.bytes - before).toDouble() / n).toInt())
                val random = SecureRandom()
                val pooled = PooledSource(16384) { random.nextBytes(it) }
                val ref = rate(seconds) { pooled.read(each) }
                rates.add(r)
                refs.add(ref)
                ratios.add(r / ref)
            }
            println("| $name | %,.0f | %.1f | %,.0f | %.3f |".format(median(rates), drawn.toDouble() / c, median(refs), median(ratios)))
        }
    }

    private fun stages(seconds: Double, rounds: Int) {
        val s = spec("\"mechanism\":\"rappor\",\"num_bits\":128,\"num_hashes\":2,\"num_cohorts\":64,\"f\":\"1/2\",\"p\":\"1/2\",\"q\":\"3/4\"")
        val encoder = RapporEncoder(s, ClientState.create(s), ByteSources.secure)
        val values = Array(1024) { "value-$it" }
        val bytes = values.map { it.toByteArray() }
        val groups = listOf(
            WordLaneGroup(longArrayOf(0x0f0f0f0f0f0f0f0fL, 0x0f0f0f0f0f0f0f0fL), Fraction.of(3, 4)),
            WordLaneGroup(longArrayOf(0x0f0f0f0f0f0f0f0fL.inv(), 0x0f0f0f0f0f0f0f0fL.inv()), Fraction.of(1, 2)),
        )
        val report = encoder.encode(values[0])
        var i = 0
        val stages: List<Pair<String, () -> Any?>> = listOf(
            "bloom positions (mmh3, h=2)" to { bloomPositions(bytes[i++ and 1023], 5, 2, 128, BloomHash.MMH3) },
            "SHAKE-256, 192 bytes" to { BouncyCastleShake256.stream(bytes[i++ and 1023]).read(192) },
            "permanent response B'" to { encoder.permanentWords(values[i++ and 1023]) },
            "lane sampling, 128 lanes" to { Samplers.sampleLaneWords(128, groups, ByteSources.secure) },
            "report JSON" to { report.toJson() },
            "encode" to { encoder.encode(values[i++ and 1023]) },
            "encode + JSON" to { encoder.encode(values[i++ and 1023]).toJson() },
        )
        val random = SecureRandom()
        val pooled = PooledSource(16384) { random.nextBytes(it) }
        println("| RAPPOR k=128 stage | per second | nextBytes(24) reference | ratio |")
        println("|---|---:|---:|---:|")
        for ((name, body) in stages) {
            rate(seconds, body)
            val rates = ArrayList<Double>()
            val ratios = ArrayList<Double>()
            val refs = ArrayList<Double>()
            repeat(rounds) {
                val r = rate(seconds, body)
                val ref = rate(seconds) { pooled.read(24) }
                rates.add(r)
                refs.add(ref)
                ratios.add(r / ref)
            }
            println("| $name | %,.0f | %,.0f | %.3f |".format(median(rates), median(refs), median(ratios)))
        }
    }

    @JvmStatic
    fun main(args: Array<String>) {
        val seconds = args.getOrNull(0)?.toDouble() ?: 1.0
        val rounds = args.getOrNull(1)?.toInt() ?: 3
        val what = args.getOrNull(2) ?: "all"
        val load = java.io.File("/proc/loadavg").takeIf { it.exists() }?.readText()?.trim() ?: "?"
        println("load average before: $load")
        if (what == "all" || what == "stages") stages(seconds, rounds)
        if (what == "all" || what == "mechanisms") mechanisms(seconds, rounds, null)
        if (what != "all" && what != "stages" && what != "mechanisms") mechanisms(seconds, rounds, what)
        println("load average after: " + (java.io.File("/proc/loadavg").takeIf { it.exists() }?.readText()?.trim() ?: "?"))
        if (sink == 42) println()
    }
}
