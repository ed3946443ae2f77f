package dev.ldp.client.upload

import dev.ldp.client.ByteSources
import dev.ldp.client.Json
import dev.ldp.client.LdpException
import dev.ldp.client.Spec
import dev.ldp.client.Text
import okhttp3.Credentials
import okhttp3.HttpUrl
import okhttp3.HttpUrl.Companion.toHttpUrlOrNull
import okhttp3.MediaType.Companion.toMediaType
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody
import okhttp3.Response
import org.json.JSONArray
import org.json.JSONException
import org.json.JSONObject
import java.io.IOException
import java.util.Base64
import java.util.concurrent.TimeUnit

/** At most this many envelopes per request (the collector's limit). */
public const val MAX_ENVELOPES: Int = 1000

/** At most this many bytes per request body (the collector's limit: 1 MiB). */
public const val MAX_BODY_BYTES: Int = 1 shl 20

private val NDJSON = "application/x-ndjson".toMediaType()

/**
 * An upload that cannot go on: the collector refused the request (4xx), stayed unreachable within the
 * flush's limits, or answered nonsense; or a line given to [Uploader.enqueue] is not a report of the
 * task. The unsent reports stay spooled. An [LdpException], like every error of the client.
 */
public class UploadException(message: String) : LdpException(message)

/** The task's public description (`GET /v1/tasks/{task}`): its spec fingerprint and time precision (seconds). */
public class TaskInfo(public val fingerprint: String, public val timePrecision: Long, public val mechanism: String)

/** A record the collector rejected (or the client refused to send): its envelope id, why. */
public class Rejected(public val id: String, public val reason: String, public val detail: String) {
    override fun equals(other: Any?): Boolean = other is Rejected && other.id == id && other.reason == reason && other.detail == detail

    override fun hashCode(): Int = (id.hashCode() * 31 + reason.hashCode()) * 31 + detail.hashCode()

    override fun toString(): String = "Rejected($id, $reason: $detail)"
}

/**
 * What a [Uploader.flush] did: envelopes the collector [accepted] (stored
 * now) and [replayed] (stored by an earlier attempt: success too), those
 * [rejected] (now in the spool's dead-letter list), the [batches] sent and the
 * [retries] made.
 */
public class UploadSummary internal constructor() {
    /** Envelopes the collector stored now. */
    public var accepted: Int = 0
        internal set

    /** Envelopes the collector had stored already (an earlier attempt's reply was lost): success too. */
    public var replayed: Int = 0
        internal set
    internal val rejectedList = ArrayList<Rejected>()

    /** Envelopes the collector rejected or the client refused to send: in the spool's dead-letter list now. */
    public val rejected: List<Rejected> get() = ArrayList(rejectedList)

    /** Requests the collector acknowledged. */
    public var batches: Int = 0
        internal set

    /** Attempts repeated after a connection error, a timeout, a 429 or a 5xx. */
    public var retries: Int = 0
        internal set

    override fun toString(): String =
        "UploadSummary(accepted=$accepted, replayed=$replayed, rejected=${rejectedList.size}, batches=$batches, retries=$retries)"
}

/** Waits between attempts (tests pass one that records instead of sleeping). */
public fun interface Sleeper {
    /** Wait [millis] milliseconds. */
    public fun sleep(millis: Long)
}

/** The time in milliseconds since the epoch (tests pass a fixed clock). */
public fun interface Clock {
    /** Milliseconds since the epoch. */
    public fun nowMillis(): Long
}

/**
 * The [Uploader]'s settings; every one has the TypeScript client's default.
 *
 * @property http the OkHttp client (share one per app: it holds the connection pool)
 * @property batchSize envelopes per request, at most [MAX_ENVELOPES]
 * @property maxBody bytes per request body, at most [MAX_BODY_BYTES]
 * @property retries retries of one request after its first attempt (connection errors, timeouts, 429, 5xx)
 * @property backoffMillis the first backoff, doubled after each failure up to [maxBackoffMillis]; each
 *   wait is jittered (CSPRNG) between half and all of it, and is at least the server's Retry-After
 * @property timeoutMillis one request's time limit (then it counts as a failed attempt)
 * @property flushDeadlineMillis no retry starts (and no wait begins) past this time from the start of a
 *   flush; what is left stays spooled
 * @property fingerprint the task's spec fingerprint when known (the spec the app loaded): [Uploader.enqueue]
 *   then refuses reports of another spec before spooling anything
 * @property progress called after each acknowledged batch with the running summary
 */
public class UploaderOptions @JvmOverloads constructor(
    public val http: OkHttpClient = defaultHttp,
    batchSize: Int = MAX_ENVELOPES,
    maxBody: Int = MAX_BODY_BYTES,
    public val retries: Int = 5,
    public val backoffMillis: Long = 500,
    public val maxBackoffMillis: Long = 5_000,
    public val timeoutMillis: Long = 15_000,
    public val flushDeadlineMillis: Long = 30_000,
    public val sleeper: Sleeper = Sleeper { Thread.sleep(it) },
    public val clock: Clock = Clock { System.currentTimeMillis() },
    fingerprint: String? = null,
    public val progress: ((UploadSummary) -> Unit)? = null,
) {
    public val batchSize: Int = minOf(batchSize, MAX_ENVELOPES)
    public val maxBody: Int = minOf(maxBody, MAX_BODY_BYTES)
    public val fingerprint: String? = fingerprint?.let { Spec.fingerprintOfTag(it) }

    init {
        if (!(this.batchSize >= 1)) throw LdpException("batchSize must be at least 1, got $batchSize")
        if (!(this.maxBody >= 1)) throw LdpException("maxBody must be at least 1, got $maxBody")
        if (!(retries >= 0)) throw LdpException("retries must not be negative, got $retries")
        if (!(backoffMillis >= 0 && maxBackoffMillis >= 0)) throw LdpException("backoff must not be negative")
        if (!(timeoutMillis >= 1 && flushDeadlineMillis >= 0)) throw LdpException("timeouts must be positive")
    }

    /** A copy with [http] as the HTTP client (Java: `new UploaderOptions().withHttp(client)`). */
    public fun withHttp(http: OkHttpClient): UploaderOptions = copy(http = http)

    /** A copy whose uploader refuses reports of any spec but [fingerprint] (a fingerprint or an ETag). */
    public fun withFingerprint(fingerprint: String): UploaderOptions = copy(fingerprint = fingerprint)

    /** A copy with [retries] retries per request. */
    public fun withRetries(retries: Int): UploaderOptions = copy(retries = retries)

    /** A copy with [flushDeadlineMillis] as a flush's time limit. */
    public fun withFlushDeadlineMillis(flushDeadlineMillis: Long): UploaderOptions = copy(flushDeadlineMillis = flushDeadlineMillis)

    /** A copy calling [progress] after each acknowledged batch. */
    public fun withProgress(progress: (UploadSummary) -> Unit): UploaderOptions = copy(progress = progress)

    private fun copy(
        http: OkHttpClient = this.http,
        retries: Int = this.retries,
        flushDeadlineMillis: Long = this.flushDeadlineMillis,
        fingerprint: String? = this.fingerprint,
        progress: ((UploadSummary) -> Unit)? = this.progress,
    ): UploaderOptions = UploaderOptions(
        http, batchSize, maxBody, retries, backoffMillis, maxBackoffMillis, timeoutMillis, flushDeadlineMillis,
        sleeper, clock, fingerprint, progress,
    )

    private companion object {
        val defaultHttp: OkHttpClient by lazy { OkHttpClient() }
    }
}

/**
 * Uploads reports to an `ldp serve` collector (docs/collector.md#upload),
 * keeping the randomize-once rule, as the TypeScript client's `Uploader`:
 *
 * - [enqueue] gives each report an envelope id once (16 CSPRNG bytes) and
 *   writes it to the [spool] before anything else, with no network request:
 *   a report that was charged to a budget is durable before the collector
 *   is even asked about the task.
 * - [flush] fetches the task's settings (`GET /v1/tasks/{task}`, once), makes
 *   each envelope (`t`: the enqueue time truncated to the task's
 *   `time_precision`; the same bytes on every attempt) and sends them in
 *   batches of at most 1,000 envelopes and 1 MiB until a 200 reply accounts
 *   for them. `accepted` and `replayed` envelopes leave the spool; `rejected`
 *   ones move to its dead-letter list ([Spool.deadLetters]), never dropped
 *   silently.
 * - Connection errors, timeouts, 429 and 5xx are retried with exponential
 *   backoff and CSPRNG jitter, waiting at least Retry-After, within the
 *   flush's time limit; what was not sent stays spooled for the next flush.
 *   Another 4xx stops with the server's problem detail ([UploadException]).
 *
 * A spool may hold several tasks: each record names its task, and an
 * Uploader sends (and removes) only its own. Blocking: call it off Android's
 * main thread (a `WorkManager` worker is the natural place). Credentials in
 * [baseUrl] (`https://user:password@host`, for a proxy in front of the
 * collector) are sent as HTTP Basic authorization and never shown.
 *
 * @param baseUrl the collector's base URL (`https://collector.example`)
 * @param taskId the task, `[A-Za-z0-9_-]{1,200}`
 */
public class Uploader @JvmOverloads constructor(
    baseUrl: String,
    public val taskId: String,
    public val spool: Spool,
    private val options: UploaderOptions = UploaderOptions(),
) {
    private val base: HttpUrl
    private val authorization: String?

    /** The collector's URL as shown in messages (without credentials). */
    public val shownUrl: String

    @Volatile
    private var task: TaskInfo? = null

    init {
        if (!TASK_ID.matches(taskId)) throw UploadException("not a task id: ${Text.clip(taskId)}")
        val url = baseUrl.toHttpUrlOrNull() ?: throw UploadException("not an http(s) URL: ${Text.clip(redact(baseUrl))}")
        authorization = if (url.username.isNotEmpty() || url.password.isNotEmpty()) {
            Credentials.basic(url.username, url.password, Charsets.UTF_8)
        } else {
            null
        }
        base = url.newBuilder().username("").password("").build()
        shownUrl = base.toString()
    }

    private val taskUrl: HttpUrl get() = base.newBuilder().addPathSegments("v1/tasks").addPathSegment(taskId).build()

    private val reportsUrl: HttpUrl get() = taskUrl.newBuilder().addPathSegment("reports").build()

    private fun request(url: HttpUrl): Request.Builder {
        val builder = Request.Builder().url(url)
        authorization?.let { builder.header("Authorization", it) }
        return builder
    }

    /**
     * The task's public description (`GET /v1/tasks/{task}`), fetched once and
     * retried as uploads are, within [deadline] (ms since the epoch).
     *
     * @throws UploadException if the collector stays unreachable, refuses, or describes no valid task.
     */
    @JvmOverloads
    public fun taskInfo(deadline: Long = options.clock.nowMillis() + options.flushDeadlineMillis): TaskInfo {
        task?.let { return it }
        val shown = taskUrl.toString()
        val doc = withRetries(deadline, null) { timeout ->
            call(request(taskUrl).header("Accept", "application/json").get().build(), timeout) { r ->
                if (r.code == 200) taskDocument(r.body.string(), shown) else failure(r)
            }
        }
        val precision = (doc.opt("time_precision") as? Number)?.takeIf { it is Int || it is Long }?.toLong()
        if (precision == null || precision < 1) throw UploadException("task $taskId has no valid time_precision")
        val fingerprint = doc.opt("fingerprint") as? String
        if (fingerprint == null || !FINGERPRINT.matches(fingerprint)) throw UploadException("task $taskId has no valid spec fingerprint")
        val expected = options.fingerprint
        if (expected != null && expected != fingerprint) {
            throw UploadException("task $taskId takes spec $fingerprint, not $expected (the spec this Uploader was given)")
        }
        val info = TaskInfo(fingerprint, precision, doc.optString("mechanism", ""))
        task = info
        return info
    }

    /**
     * Spool report JSON lines (as the encoders write them), each with a fresh
     * envelope id, durably and before anything else: no network request. A
     * line that is not a report (a JSON object with a spec fingerprint), or,
     * when the task's fingerprint is known (the `fingerprint` option, or an
     * earlier flush), a report of another spec, is refused before anything is
     * written. Returns the spool records.
     *
     * @throws UploadException for a line that is not a report of this task's spec; nothing is spooled then.
     */
    public fun enqueue(reportLines: List<String>): List<String> {
        val fingerprint = task?.fingerprint ?: options.fingerprint
        val reports = reportLines.mapIndexed { i, raw ->
            val line = raw.trim()
            if ('\n' in line || '\r' in line) throw UploadException("line ${i + 1} holds a line break: one report per line")
            val spec = reportSpec(line) ?: throw UploadException(
                "line ${i + 1} is not a report (a JSON object with a spec fingerprint): ${Text.clip(line)}",
            )
            if (fingerprint != null && spec != fingerprint) {
                throw UploadException("report of spec ${Text.clip(spec)}, but task $taskId takes $fingerprint; nothing was spooled")
            }
            // its envelope ({"id":<22>,"t":<up to 19 digits>,"report":...} and a newline) must fit one request
            val envelopeBytes = utf8Length(line) + ENVELOPE_OVERHEAD
            if (envelopeBytes > options.maxBody) {
                throw UploadException("line ${i + 1} is too long to upload ($envelopeBytes bytes with its envelope, over ${options.maxBody}); nothing was spooled")
            }
            line
        }
        val seconds = Math.floorDiv(options.clock.nowMillis(), 1000L)
        val precision = task?.timePrecision
        val time = if (precision == null) "\"at\":$seconds" else "\"t\":${seconds - Math.floorMod(seconds, precision)}"
        val records = reports.map { "{\"task\":\"$taskId\",\"id\":\"${envelopeId()}\",$time,\"report\":$it}" }
        spool.append(records)
        return records
    }

    /** The report lines of [reports], spooled (see the list form). */
    public fun enqueue(vararg reports: String): List<String> = enqueue(reports.toList())

    private class Envelope(val id: String, val envelope: String, val spec: String?)

    /** The envelope of one of this task's records (null: another task's, or a bare envelope of another spec). */
    private fun envelope(line: String, task: TaskInfo): Envelope? {
        val r = parseRecord(line) ?: return null
        val spec = reportSpec(r.report)
        if (if (r.task == null) spec != task.fingerprint else r.task != taskId) return null
        val t = r.t ?: (r.at!! - Math.floorMod(r.at, task.timePrecision))
        return Envelope(r.id, "{\"id\":\"${r.id}\",\"t\":$t,\"report\":${r.report}}", spec)
    }

    /**
     * Send this task's spooled records: fetch the task's settings (once), make
     * the envelopes, send them in batches. Each batch leaves the spool once a
     * 200 reply accounts for it: accepted and replayed envelopes are removed,
     * rejected ones moved to the dead-letter list. Records of another spec than
     * the task's (`wrong_spec`), and envelopes too long for one request
     * (`too_large`: a record spooled under a larger limit), are dead-lettered
     * without being sent.
     *
     * @throws UploadException when the collector stays unreachable (within the flush's time limit)
     *   or refuses the request; what was not acknowledged stays spooled.
     */
    @Synchronized
    public fun flush(): UploadSummary {
        val deadline = options.clock.nowMillis() + options.flushDeadlineMillis
        val summary = UploadSummary()
        val lines = spool.load()
        val task = taskInfo(deadline)
        val mine = lines.mapNotNull { envelope(it, task) }
        val foreign = LinkedHashMap<String, Rejection>()
        for (e in mine) {
            if (e.spec != task.fingerprint) {
                val detail = "report of spec ${Text.clip(e.spec.toString())}, but task $taskId takes ${task.fingerprint}; not sent"
                foreign[e.id] = Rejection("wrong_spec", detail)
                summary.rejectedList.add(Rejected(e.id, "wrong_spec", detail))
            }
        }
        // an envelope over the body limit can never be sent: kept in the dead-letter list, not left to block the rest
        for (e in mine) {
            val bytes = utf8Length(e.envelope) + 1
            if (e.id !in foreign && bytes > options.maxBody) {
                val detail = "envelope of $bytes bytes is over the request limit of ${options.maxBody} bytes; not sent"
                foreign[e.id] = Rejection("too_large", detail)
                summary.rejectedList.add(Rejected(e.id, "too_large", detail))
            }
        }
        if (foreign.isNotEmpty()) spool.deadLetter(foreign)
        val sendable = mine.filter { it.id !in foreign }
        val envelopes = sendable.map { it.envelope }
        for ((start, end) in batchBounds(envelopes, options.batchSize, options.maxBody)) {
            val batch = sendable.subList(start, end)
            val body = buildString { for (l in envelopes.subList(start, end)) append(l).append('\n') } // the same bytes on every attempt
            val bytes = body.toByteArray(Charsets.UTF_8)
            val reply = withRetries(deadline, summary) { timeout -> post(bytes, timeout) }
            if (reply.accepted + reply.replayed + reply.rejected.size != batch.size) {
                throw UploadException(
                    "reply accounts for ${reply.accepted + reply.replayed + reply.rejected.size} of ${batch.size} envelopes",
                )
            }
            val rejected = LinkedHashMap<String, Rejection>()
            for (r in reply.rejected) {
                val id = (if (r.index in batch.indices) batch[r.index].id else null) ?: r.id ?: continue
                rejected[id] = Rejection(r.reason, r.detail)
                summary.rejectedList.add(Rejected(id, r.reason, r.detail))
            }
            summary.accepted += reply.accepted
            summary.replayed += reply.replayed
            summary.batches += 1
            if (rejected.isNotEmpty()) spool.deadLetter(rejected) // kept, before the batch leaves the spool
            spool.remove(batch.mapNotNullTo(HashSet()) { e -> e.id.takeIf { it !in rejected } })
            options.progress?.invoke(summary)
        }
        return summary
    }

    private class ReplyRejection(val index: Int, val id: String?, val reason: String, val detail: String)

    private class Reply(val accepted: Int, val replayed: Int, val rejected: List<ReplyRejection>)

    private sealed class Outcome<out T> {
        class Value<T>(val value: T) : Outcome<T>()

        class Retry(val why: String, val afterSeconds: Double?) : Outcome<Nothing>()
    }

    private fun post(body: ByteArray, timeoutMillis: Long): Outcome<Reply> =
        call(request(reportsUrl).post(body.toRequestBody(NDJSON)).build(), timeoutMillis) { r ->
            if (r.code == 200) reply(r.body.string()) else failure(r)
        }

    /** One request; a connection failure or timeout is an [Outcome.Retry]. */
    private fun <T> call(request: Request, timeoutMillis: Long, handle: (Response) -> Outcome<T>): Outcome<T> {
        val call = options.http.newCall(request)
        call.timeout().timeout(timeoutMillis, TimeUnit.MILLISECONDS)
        return try {
            call.execute().use(handle)
        } catch (e: IOException) {
            Outcome.Retry("connection failed: ${e.message ?: e.javaClass.simpleName}", null)
        }
    }

    /** A retryable outcome (429, 5xx), or an [UploadException] with the problem document's detail. */
    private fun failure(r: Response): Outcome.Retry {
        val text = try {
            r.body.string()
        } catch (_: IOException) {
            ""
        }
        if (r.code == 429 || r.code >= 500) {
            return Outcome.Retry("HTTP ${r.code}", retryAfterSeconds(r.header("Retry-After"), options.clock.nowMillis()))
        }
        var detail = text.take(500)
        try {
            val doc = JSONObject(text)
            val d = doc.opt("detail")
            if (d is String) detail = "${doc.optString("title", "")}: $d"
        } catch (_: JSONException) {
            // not a problem document: keep the text
        }
        throw UploadException("HTTP ${r.code} from the collector: $detail")
    }

    /** Exponential backoff with CSPRNG jitter (half fixed, half random), at least Retry-After (ms). */
    public fun delayMillis(failures: Int, retryAfterSeconds: Double?): Long {
        val doubled = options.backoffMillis.toDouble() * Math.pow(2.0, (failures - 1).toDouble())
        val ceiling = minOf(options.maxBackoffMillis.toDouble(), doubled)
        val jitter = unitFraction()
        val backoff = ceiling / 2 + jitter * ceiling / 2
        return Math.ceil(maxOf(backoff, (retryAfterSeconds ?: 0.0) * 1000)).toLong()
    }

    private fun <T> withRetries(deadline: Long, summary: UploadSummary?, attempt: (Long) -> Outcome<T>): T {
        var failures = 0
        while (true) {
            val left = deadline - options.clock.nowMillis()
            val outcome = attempt(minOf(options.timeoutMillis, maxOf(left, 1000L)))
            val retry = when (outcome) {
                is Outcome.Value -> return outcome.value
                is Outcome.Retry -> outcome
            }
            failures += 1
            val wait = delayMillis(failures, retry.afterSeconds)
            if (failures > options.retries) {
                throw UploadException("gave up after $failures attempts: ${retry.why}; the reports stay spooled")
            }
            if (options.clock.nowMillis() + wait > deadline) {
                throw UploadException(
                    "gave up after $failures attempts (the flush's time limit, ${options.flushDeadlineMillis} ms, would pass " +
                        "before the next): ${retry.why}; the reports stay spooled",
                )
            }
            summary?.let { it.retries += 1 }
            options.sleeper.sleep(wait)
        }
    }

    /** A 200 reply that is not JSON (a proxy's page, a body cut short) is retried, as a failed attempt. */
    private fun taskDocument(text: String, shown: String): Outcome<JSONObject> = try {
        Outcome.Value(JSONObject(text))
    } catch (_: JSONException) {
        Outcome.Retry("$shown did not answer a task description: ${Text.clip(text)}", null)
    }

    private fun reply(text: String): Outcome<Reply> {
        val doc = try {
            JSONObject(text)
        } catch (_: JSONException) {
            return Outcome.Retry("the collector's reply is not JSON: ${Text.clip(text)}", null)
        }
        return Outcome.Value(parseReply(doc, text))
    }

    /** The accounting of a 200 reply; an [UploadException] when it is JSON of another shape (nothing is removed then). */
    private fun parseReply(doc: JSONObject, text: String): Reply {
        val bad = "the collector's reply is not an upload result: ${Text.clip(text)}"
        fun count(name: String): Int = (doc.opt(name) as? Int)?.takeIf { it >= 0 } ?: throw UploadException(bad)
        val list = doc.opt("rejected") as? JSONArray ?: throw UploadException(bad)
        val rejected = (0 until list.length()).map { i ->
            val r = list.opt(i) as? JSONObject ?: throw UploadException(bad)
            ReplyRejection(
                (r.opt("index") as? Int) ?: -1,
                r.opt("id") as? String,
                r.opt("reason") as? String ?: throw UploadException(bad),
                r.opt("detail") as? String ?: "",
            )
        }
        return Reply(count("accepted"), count("replayed"), rejected)
    }

    private fun redact(url: String): String = url.replace(Regex("//([^/@]*)@"), "//***@")

    public companion object {
        private val TASK_ID = Regex("[A-Za-z0-9_-]{1,200}")

        /** Bytes an envelope adds to its report at most: `{"id":"<22>","t":<19 digits>,"report":` … `}` and a newline. */
        private const val ENVELOPE_OVERHEAD = 66
        private val FINGERPRINT = Regex("[0-9a-f]{16}")

        /** A fresh envelope id: 16 CSPRNG bytes, base64url without padding (22 characters). */
        @JvmStatic
        public fun envelopeId(): String =
            Base64.getUrlEncoder().withoutPadding().encodeToString(randomBytes(16))

        private fun randomBytes(n: Int): ByteArray = ByteSources.secure.read(n)

        /** A uniform fraction in [0, 1) from 4 CSPRNG bytes (backoff jitter). */
        private fun unitFraction(): Double {
            val b = randomBytes(4)
            val x = ((b[0].toLong() and 0xff) shl 24) or ((b[1].toLong() and 0xff) shl 16) or
                ((b[2].toLong() and 0xff) shl 8) or (b[3].toLong() and 0xff)
            return x / 4294967296.0
        }

        /** Seconds from a Retry-After header value (delta seconds or an HTTP date), or null. */
        @JvmStatic
        public fun retryAfterSeconds(value: String?, nowMillis: Long): Double? {
            val v = value?.trim()
            if (v.isNullOrEmpty()) return null
            if (v.all { it in '0'..'9' }) return v.toBigInteger().toDouble()
            val headers = okhttp3.Headers.Builder().add("Retry-After", v).build()
            val date = headers.getDate("Retry-After") ?: return null
            return maxOf(0.0, (date.time - nowMillis) / 1000.0)
        }

        /**
         * Consecutive batches `[start, end)` of [lines] under both limits: at most
         * [size] lines and [maxBody] bytes each (UTF-8, a newline after each line).
         *
         * @throws UploadException if one line alone is over [maxBody] bytes.
         */
        @JvmStatic
        public fun batchBounds(lines: List<String>, size: Int, maxBody: Int): List<Pair<Int, Int>> {
            val out = ArrayList<Pair<Int, Int>>()
            var start = 0
            var bytes = 0L
            lines.forEachIndexed { i, line ->
                val n = utf8Length(line) + 1L
                if (n > maxBody) throw UploadException("envelope $i alone is over $maxBody bytes")
                if (i - start == size || bytes + n > maxBody) {
                    out.add(Pair(start, i))
                    start = i
                    bytes = 0
                }
                bytes += n
            }
            if (start < lines.size) out.add(Pair(start, lines.size))
            return out
        }
    }
}

private fun utf8Length(s: String): Int {
    var n = 0
    var i = 0
    while (i < s.length) {
        val c = s[i]
        n += when {
            c.code < 0x80 -> 1
            c.code < 0x800 -> 2
            Character.isHighSurrogate(c) && i + 1 < s.length && Character.isLowSurrogate(s[i + 1]) -> {
                i++
                4
            }
            else -> 3
        }
        i++
    }
    return n
}

private class SpoolRecord(val task: String?, val id: String, val at: Long?, val t: Long?, val report: String)

private val RECORD = Regex(
    "^\\{\"task\":\"([A-Za-z0-9_-]{1,200})\",\"id\":\"([A-Za-z0-9_-]{22})\",\"(at|t)\":(0|[1-9][0-9]{0,17}),\"report\":(.*)\\}$",
    RegexOption.DOT_MATCHES_ALL,
)
private val BARE_ENVELOPE = Regex(
    "^\\{\"id\":\"([A-Za-z0-9_-]{22})\",\"t\":(0|[1-9][0-9]{0,17}),\"report\":(.*)\\}$",
    RegexOption.DOT_MATCHES_ALL,
)

/**
 * A spool record as [Uploader.enqueue] writes it: its task, the envelope id,
 * the time (`t`, truncated to the task's precision when the Uploader knew it;
 * else `at`, the enqueue time in Unix seconds, truncated when the envelope is
 * made) and the report's exact bytes. A bare envelope `{"id","t","report"}`
 * is read too.
 */
private fun parseRecord(line: String): SpoolRecord? {
    RECORD.matchEntire(line)?.let { m ->
        val (task, id, kind, time, report) = m.destructured
        val value = time.toLong()
        return SpoolRecord(task, id, if (kind == "at") value else null, if (kind == "t") value else null, report)
    }
    BARE_ENVELOPE.matchEntire(line)?.let { m ->
        val (id, time, report) = m.destructured
        return SpoolRecord(null, id, null, time.toLong(), report)
    }
    return null
}

/**
 * The envelope id of a spool record (or of a bare envelope).
 *
 * @throws UploadException for a line that is neither.
 */
public fun recordId(line: String): String {
    parseRecord(line)?.let { return it.id }
    val id = try {
        (Json.parse(line) as? Map<*, *>)?.get("id")
    } catch (_: LdpException) {
        null
    }
    return id as? String ?: throw UploadException("not a spool record: ${Text.clip(line)}")
}

/** The `spec` of a report line, or null when it is not a report object (strict JSON: the collector's reading). */
private fun reportSpec(report: String): String? = try {
    (Json.parse(report) as? Map<*, *>)?.get("spec") as? String
} catch (_: LdpException) {
    null
}
