package dev.ldp.client.upload

import dev.ldp.client.Json
import okhttp3.OkHttpClient
import mockwebserver3.Dispatcher
import mockwebserver3.MockResponse
import mockwebserver3.MockWebServer
import mockwebserver3.RecordedRequest
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Files
import java.nio.file.Path
import java.nio.file.attribute.PosixFilePermissions
import java.util.Collections
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertNotEquals
import kotlin.test.assertTrue

/** The uploader's contract (the TypeScript client's tests), against OkHttp's MockWebServer. */
class UploaderTest {
    @TempDir
    lateinit var temp: Path

    private val servers = ArrayList<MockWebServer>()
    private val fingerprint = "188d58b9fcd60010"
    private val task = """{"fingerprint":"$fingerprint","time_precision":60,"mechanism":"grr"}"""
    private val clock = 1_764_000_059_000L
    private val http = OkHttpClient.Builder().retryOnConnectionFailure(false).build()

    @AfterEach
    fun stop() {
        servers.forEach { it.close() }
    }

    private fun json(status: Int, body: String, vararg headers: Pair<String, String>): MockResponse {
        val r = MockResponse.Builder().code(status).body(body).setHeader("Content-Type", "application/json")
        headers.forEach { (k, v) -> r.setHeader(k, v) }
        return r.build()
    }

    /** A local port nothing listens on (just released). */
    private fun freePort(): Int = java.net.ServerSocket(0).use { it.localPort }

    private fun serve(port: Int = 0, handle: (RecordedRequest) -> MockResponse): MockWebServer {
        val server = MockWebServer()
        server.dispatcher = object : Dispatcher() {
            override fun dispatch(request: RecordedRequest): MockResponse = handle(request)
        }
        server.start(java.net.InetAddress.getByName("127.0.0.1"), port)
        servers.add(server)
        return server
    }

    private fun options(
        sleeps: MutableList<Long> = ArrayList(),
        fingerprint: String? = null,
        now: Long = clock,
    ) = UploaderOptions(
        http = http,
        sleeper = Sleeper { sleeps.add(it) },
        clock = Clock { now },
        fingerprint = fingerprint,
    )

    private fun report(value: String, spec: String = fingerprint) = """{"v":1,"spec":"$spec","value":"$value"}"""

    private fun text(r: RecordedRequest): String = r.body?.utf8() ?: ""

    private fun lines(body: String): List<String> = body.split("\n").dropLast(1)

    @Test
    fun envelopeIdsAre16CsprngBytesInBase64Url() {
        val id = Uploader.envelopeId()
        assertTrue(Regex("[A-Za-z0-9_-]{22}").matches(id), id)
        assertNotEquals(id, Uploader.envelopeId())
    }

    @Test
    fun batchesStayUnderTheCountAndByteLimits() {
        assertEquals(listOf(0 to 1, 1 to 3, 3 to 4), Uploader.batchBounds(listOf("aaaa", "bb", "cc", "d"), 2, 7))
        val e = assertFailsWith<UploadException> { Uploader.batchBounds(listOf("x".repeat(10)), 5, 8) }
        assertEquals("envelope 0 alone is over 8 bytes", e.message)
        // UTF-8 bytes, not characters: "é" is 2 bytes, "😀" 4
        assertEquals(listOf(0 to 1, 1 to 2), Uploader.batchBounds(listOf("é", "\ud83d\ude00"), 10, 5))
    }

    @Test
    fun spoolsBeforeSendingRetries429AfterRetryAfterWithTheSameBytesAndEmptiesTheSpoolOnlyOn200() {
        val spool = MemorySpool()
        val bodies = Collections.synchronizedList(ArrayList<String>())
        var spooledAtFirstPost = -1
        val server = serve { r ->
            if (r.method == "GET") return@serve json(200, task)
            if (spooledAtFirstPost < 0) spooledAtFirstPost = spool.load().size
            bodies.add(text(r))
            when (bodies.size) {
                1 -> json(429, """{"title":"slow down"}""", "Retry-After" to "2")
                2 -> json(502, "bad gateway")
                else -> json(200, """{"accepted":${lines(bodies.last()).size - 1},"replayed":1,"rejected":[]}""")
            }
        }
        val sleeps = ArrayList<Long>()
        val uploader = Uploader(server.url("/").toString(), "T", spool, options(sleeps))
        val reports = List(5) { report("a") }
        val records = uploader.enqueue(reports)
        assertTrue(Regex("""\{"task":"T","id":"[A-Za-z0-9_-]{22}","at":1764000059,"report":\{"v":1,.*""").matches(records[0]), records[0])
        assertEquals(0, server.requestCount, "enqueue asks the collector nothing")
        val summary = uploader.flush()
        assertEquals(5, spooledAtFirstPost)
        assertTrue(bodies.size >= 3)
        assertTrue(bodies.all { it == bodies[0] }, "never re-randomized, never re-minted")
        assertTrue(Regex("""\{"id":"[A-Za-z0-9_-]{22}","t":1764000000,"report":\{"v":1,"spec":"[0-9a-f]{16}","value":"a"\}\}\n.*""", RegexOption.DOT_MATCHES_ALL).matches(bodies[0]))
        assertTrue(sleeps[0] >= 2000, "waited at least Retry-After: $sleeps")
        assertEquals(listOf(4, 1, 2), listOf(summary.accepted, summary.replayed, summary.retries))
        assertEquals(emptyList<String>(), spool.load())
        // the task is known now: later records carry t, truncated
        assertTrue("\"t\":1764000000," in uploader.enqueue(listOf(reports[0]))[0])
    }

    @Test
    fun a4xxProblemDocumentStopsTheUploadWithItsDetailAndKeepsTheSpool() {
        val spool = MemorySpool()
        val server = serve { r ->
            if (r.method == "GET") json(200, task) else json(413, """{"title":"Payload Too Large","detail":"body over 1 MiB"}""")
        }
        val uploader = Uploader(server.url("/").toString(), "T", spool, options())
        uploader.enqueue(listOf(report("b")))
        val e = assertFailsWith<UploadException> { uploader.flush() }
        assertEquals("HTTP 413 from the collector: Payload Too Large: body over 1 MiB", e.message)
        assertEquals(1, spool.load().size)
    }

    @Test
    fun refusesReportsOfAnotherSpecBeforeSpoolingWhenTheFingerprintIsKnownElseDeadLettersThemUnsent() {
        val spool = MemorySpool()
        var posts = 0
        val server = serve { r -> if (r.method == "GET") json(200, task) else json(500, "{}").also { posts++ } }
        val known = Uploader(server.url("/").toString(), "T", spool, options(fingerprint = "\"$fingerprint\""))
        val other = assertFailsWith<UploadException> { known.enqueue(listOf(report("b", "0000000000000000"))) }
        assertTrue(other.message!!.endsWith("takes $fingerprint; nothing was spooled"), other.message)
        val junk = assertFailsWith<UploadException> { known.enqueue(listOf("not a report")) }
        assertTrue(junk.message!!.startsWith("line 1 is not a report"), junk.message)
        // lenient JSON is not a report: the collector reads strict JSON
        assertFailsWith<UploadException> { known.enqueue(listOf("{'v':1,'spec':'$fingerprint'}")) }
        assertEquals(0, spool.load().size)
        val unknown = Uploader(server.url("/").toString(), "T", spool, options())
        unknown.enqueue(listOf(report("b", "0000000000000000")))
        val summary = unknown.flush()
        assertEquals(0, posts)
        assertEquals(listOf("wrong_spec"), summary.rejected.map { it.reason })
        assertEquals(0, spool.load().size)
        assertEquals("wrong_spec", spool.deadLetters()[0].reason)
    }

    @Test
    fun enqueueNeverAsksTheCollectorReportsWaitWhileItIsDownAndAreSentWhenItIsBack() {
        val spool = MemorySpool()
        val port = freePort() // nothing listens there yet: connection refused
        val uploader = Uploader("http://127.0.0.1:$port/", "T", spool, options())
        val records = uploader.enqueue(listOf(report("a")))
        assertEquals(records, spool.load())
        val e = assertFailsWith<UploadException> { uploader.flush() }
        assertTrue(Regex("gave up after 6 attempts: connection failed: .*; the reports stay spooled").matches(e.message!!), e.message)
        assertEquals(records, spool.load())
        val server = serve(port) { r ->
            if (r.method == "GET") json(200, task) else json(200, """{"accepted":${lines(text(r)).size},"replayed":0,"rejected":[]}""")
        }
        assertEquals(1, uploader.flush().accepted)
        assertEquals(2, server.requestCount)
        assertEquals(emptyList<String>(), spool.load())
    }

    @Test
    fun anOfflineFlushIsBoundedSixAttemptsAbout6To13SecondsOfBackoffALongRetryAfterEndsItAtOnce() {
        val spool = MemorySpool()
        val waits = ArrayList<Long>()
        val uploader = Uploader("http://127.0.0.1:${freePort()}/", "T", spool, options(waits))
        uploader.enqueue(listOf(report("a")))
        assertTrue(assertFailsWith<UploadException> { uploader.flush() }.message!!.startsWith("gave up after 6 attempts"))
        assertEquals(5, waits.size)
        assertTrue(waits.sum() in 6_250L..12_500L, "backoff total ${waits.sum()} ms")
        val busy = serve { json(503, "{}", "Retry-After" to "3600") }
        waits.clear()
        val again = Uploader(busy.url("/").toString(), "T", spool, options(waits))
        val e = assertFailsWith<UploadException> { again.flush() }
        assertTrue("time limit, 30000 ms, would pass before the next" in e.message!!, e.message)
        assertEquals(emptyList<Long>(), waits)
        assertEquals(1, spool.load().size)
    }

    @Test
    fun retryAfterReadsSecondsAndHttpDates() {
        assertEquals(120.0, Uploader.retryAfterSeconds(" 120 ", 0))
        assertEquals(30.0, Uploader.retryAfterSeconds("Thu, 01 Jan 1970 00:01:00 GMT", 30_000))
        assertEquals(0.0, Uploader.retryAfterSeconds("Thu, 01 Jan 1970 00:01:00 GMT", 90_000))
        assertEquals(null, Uploader.retryAfterSeconds("soon", 0))
        assertEquals(null, Uploader.retryAfterSeconds(null, 0))
    }

    @Test
    fun twoTasksOnOneSpoolEachSendsAndRemovesOnlyItsOwnARejectedEnvelopeIsDeadLettered() {
        for (spool in listOf(MemorySpool(), FileSpool(temp.resolve("spool.jsonl")))) {
            val other = """{"fingerprint":"0123456789abcdef","time_precision":3600,"mechanism":"grr"}"""
            val posted = mapOf("A" to ArrayList<String>(), "B" to ArrayList<String>())
            val server = serve { r ->
                val name = Regex("/v1/tasks/([AB])").find(r.url.encodedPath)!!.groupValues[1]
                if (r.method == "GET") return@serve json(200, if (name == "A") task else other)
                val ids = lines(text(r)).map { (Json.parseObject(it)["id"] as String) }
                synchronized(posted) { posted.getValue(name).addAll(ids) }
                // the collector rejects A's second envelope
                val rejected = if (name == "A") """[{"index":1,"id":"${ids[1]}","reason":"invalid_report","detail":"bad bits"}]""" else "[]"
                json(200, """{"accepted":${ids.size - (if (name == "A") 1 else 0)},"replayed":0,"rejected":$rejected}""")
            }
            val a = Uploader(server.url("/").toString(), "A", spool, options())
            val b = Uploader(server.url("/").toString(), "B", spool, options())
            val ra = a.enqueue(listOf(report("a"), report("b")))
            val rb = b.enqueue(listOf(report("c", "0123456789abcdef")))
            val summary = a.flush()
            assertEquals(ra.map { recordId(it) }, posted.getValue("A").toList())
            assertEquals(emptyList<String>(), posted.getValue("B").toList())
            assertEquals(listOf(Rejected(recordId(ra[1]), "invalid_report", "bad bits")), summary.rejected)
            assertEquals(rb, spool.load(), "B's record untouched")
            assertEquals(listOf(DeadLetter(ra[1], "invalid_report", "bad bits")), spool.deadLetters())
            b.flush()
            assertEquals(rb.map { recordId(it) }, posted.getValue("B").toList())
            assertEquals(emptyList<String>(), spool.load())
            spool.removeDeadLetters(setOf(recordId(ra[1])))
            assertEquals(emptyList<DeadLetter>(), spool.deadLetters())
        }
    }

    @Test
    fun aFileSpoolKeepsEnvelopesAcrossInstancesAt0600AndDropsATornLastLine() {
        val file = temp.resolve("spool.jsonl")
        val spool = FileSpool(file)
        spool.append(listOf("""{"id":"A","t":0,"report":{}}""", """{"id":"B","t":0,"report":{}}"""))
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
        Files.write(file, Files.readAllBytes(file) + """{"id":"C","t"""".toByteArray()) // a crash mid-append
        assertEquals(2, FileSpool(file).load().size)
        spool.remove(setOf("A"))
        assertEquals(listOf("""{"id":"B","t":0,"report":{}}"""), spool.load())
    }

    @Test
    fun thousandsOfReportsGoInRequestsOfAtMost1000EnvelopesAnd1MiB() {
        val spool = MemorySpool()
        val sizes = Collections.synchronizedList(ArrayList<Pair<Int, Long>>())
        val server = serve { r ->
            if (r.method == "GET") return@serve json(200, task)
            val body = text(r)
            val n = lines(body).size
            sizes.add(n to body.toByteArray().size.toLong())
            json(200, """{"accepted":$n,"replayed":0,"rejected":[]}""")
        }
        val uploader = Uploader(server.url("/").toString(), "T", spool, options())
        uploader.enqueue(List(2_500) { report("v$it") })
        // long reports: 1 MiB holds fewer than 1,000 of them
        uploader.enqueue(List(600) { report("x".repeat(2_000)) })
        val summary = uploader.flush()
        assertEquals(3_100, summary.accepted)
        assertTrue(sizes.all { (n, bytes) -> n <= MAX_ENVELOPES && bytes <= MAX_BODY_BYTES }, "$sizes")
        assertEquals(3_100, sizes.sumOf { it.first })
        assertTrue(sizes.any { it.first < MAX_ENVELOPES && it.second > MAX_BODY_BYTES - 3_000 }, "the byte limit split a batch: $sizes")
        assertEquals(emptyList<String>(), spool.load())
    }

    @Test
    fun credentialsInTheUrlAreSentAsBasicAuthorizationAndNeverShown() {
        val auth = Collections.synchronizedList(ArrayList<String?>())
        val server = serve { r ->
            auth.add(r.headers["Authorization"])
            if (r.method == "GET") json(200, task) else json(401, """{"title":"Unauthorized","detail":"no"}""")
        }
        val url = server.url("/").newBuilder().username("u").password("s3cret").build().toString()
        val uploader = Uploader(url, "T", MemorySpool(), options())
        assertFalse("s3cret" in uploader.shownUrl)
        uploader.enqueue(listOf(report("a")))
        val e = assertFailsWith<UploadException> { uploader.flush() }
        assertFalse("s3cret" in e.message!!)
        assertEquals(listOf(okhttp3.Credentials.basic("u", "s3cret")), auth.distinct())
    }

    @Test
    fun aGarbled200IsRetriedAndAReplyThatDoesNotAccountForTheBatchKeepsItSpooled() {
        val spool = MemorySpool()
        var posts = 0
        val server = serve { r ->
            if (r.method == "GET") return@serve json(200, task)
            posts++
            if (posts == 1) json(200, "<html>proxy</html>") else json(200, """{"accepted":1,"replayed":0,"rejected":[]}""")
        }
        val uploader = Uploader(server.url("/").toString(), "T", spool, options())
        uploader.enqueue(listOf(report("a")))
        assertEquals(1, uploader.flush().retries)
        uploader.enqueue(listOf(report("a"), report("b")))
        val e = assertFailsWith<UploadException> { uploader.flush() }
        assertEquals("reply accounts for 1 of 2 envelopes", e.message)
        assertEquals(2, spool.load().size, "nothing leaves the spool without the collector's account of it")
    }

    @Test
    fun optionsCopyForJavaCallers() {
        val base = UploaderOptions()
        val changed = base.withRetries(2).withFingerprint("W/\"${fingerprint.uppercase()}\"").withFlushDeadlineMillis(5_000).withHttp(http)
        assertEquals(listOf(2, 5_000L, fingerprint), listOf(changed.retries, changed.flushDeadlineMillis, changed.fingerprint))
        assertEquals(listOf(5, null), listOf(base.retries, base.fingerprint), "the original is unchanged")
        assertEquals(MAX_ENVELOPES, UploaderOptions(batchSize = 5_000).batchSize, "capped at the collector's limit")
    }

    @Test
    fun aReportTooLongForOneRequestIsRefusedAtEnqueueAndDeadLetteredIfSpooledUnderALargerLimit() {
        val spool = MemorySpool()
        var posts = 0
        val server = serve { r ->
            if (r.method == "GET") return@serve json(200, task)
            posts++
            json(200, """{"accepted":${lines(text(r)).size},"replayed":0,"rejected":[]}""")
        }
        val small = UploaderOptions(http = http, maxBody = 200, sleeper = Sleeper { }, clock = Clock { clock })
        val long = report("x".repeat(150))
        val e = assertFailsWith<UploadException> { Uploader(server.url("/").toString(), "T", spool, small).enqueue(listOf(long)) }
        assertTrue(e.message!!.startsWith("line 1 is too long to upload"), e.message)
        assertEquals(emptyList<String>(), spool.load())
        // spooled by an uploader with the default limit, flushed by one with a smaller: dead-lettered, the rest sent
        Uploader(server.url("/").toString(), "T", spool, options()).enqueue(listOf(long, report("a")))
        val summary = Uploader(server.url("/").toString(), "T", spool, small).flush()
        assertEquals(listOf("too_large"), summary.rejected.map { it.reason })
        assertEquals(1, summary.accepted)
        assertEquals(1, posts)
        assertEquals(emptyList<String>(), spool.load())
        assertEquals("too_large", spool.deadLetters().single().reason)
    }

    @Test
    fun badArgumentsAreRefusedWithOneLine() {
        assertEquals("not a task id: a/b", assertFailsWith<UploadException> { Uploader("http://x", "a/b", MemorySpool()) }.message)
        assertFailsWith<UploadException> { Uploader("ftp://x", "T", MemorySpool()) }
        val lineBreak = assertFailsWith<UploadException> { Uploader("http://x", "T", MemorySpool()).enqueue(listOf("{\"spec\":\n\"$fingerprint\"}")) }
        assertEquals("line 1 holds a line break: one report per line", lineBreak.message)
    }
}
