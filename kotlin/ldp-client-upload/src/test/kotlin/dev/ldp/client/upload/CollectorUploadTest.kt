package dev.ldp.client.upload

import dev.ldp.client.Vectors
import dev.ldp.client.mechanisms.RapporEncoder
import dev.ldp.client.state.ClientStates
import dev.ldp.client.state.FileStateStorage
import dev.ldp.client.str
import okhttp3.OkHttpClient
import okhttp3.Request
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.io.TempDir
import org.json.JSONObject
import java.io.File
import java.io.IOException
import java.nio.file.Files
import java.nio.file.Path
import java.util.concurrent.TimeUnit
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/**
 * Cross-language: RAPPOR reports of persistent Kotlin clients uploaded to a real `ldp serve` (the
 * Python collector, from PATH) across a `kill -9` of the server; every report is stored exactly once.
 * Skipped, with a message, when `ldp` is not on PATH.
 */
class CollectorUploadTest {
    @TempDir
    lateinit var temp: Path

    private var server: Process? = null

    @AfterEach
    fun stop() {
        server?.destroyForcibly()?.waitFor(10, TimeUnit.SECONDS)
    }

    private fun ldp(): File? = System.getenv("PATH").orEmpty().split(File.pathSeparator)
        .map { File(it, "ldp") }.firstOrNull { it.isFile && it.canExecute() }

    private fun run(vararg args: String): String {
        val out = temp.resolve("out-${System.nanoTime()}.txt").toFile()
        val process = ProcessBuilder(*args).directory(temp.toFile()).redirectErrorStream(true).redirectOutput(out).start()
        assertTrue(process.waitFor(120, TimeUnit.SECONDS), "${args.toList()} did not finish")
        val text = out.readText()
        assertEquals(0, process.exitValue(), "${args.toList()}: $text")
        return text
    }

    private fun serve(ldp: File, port: Int): Process =
        ProcessBuilder(ldp.path, "serve", "--store", "db.sqlite", "--port", port.toString(), "--rate-limit", "0")
            .directory(temp.toFile()).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(temp.resolve("serve.log").toFile()))
            .start()

    private fun awaitUp(url: String) {
        val http = OkHttpClient()
        val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60)
        while (System.nanoTime() < deadline) {
            try {
                http.newCall(Request.Builder().url(url).build()).execute().use { if (it.code == 200) return }
            } catch (_: IOException) {
                // not listening yet
            }
            Thread.sleep(100)
        }
        error("ldp serve did not answer $url within 60 s: ${temp.resolve("serve.log").toFile().readText()}")
    }

    @Test
    fun rapporReportsReachARealCollectorOnceAcrossAKill9() {
        val ldp = ldp()
        assumeTrue(ldp != null, "ldp is not on PATH: skipping the upload to a real ldp serve")
        ldp!!
        val case = Vectors.list(Vectors.section("specs"), "cases").first { it.str("id") == "rappor/mmh3" }
        val spec = Vectors.specs.getValue("rappor/mmh3")
        Files.write(temp.resolve("spec.json"), case.str("canonical_json").toByteArray())
        val created = JSONObject(run(ldp.path, "task", "create", "--store", "db.sqlite", "--spec", "spec.json", "--json", "--min-batch", "1").trim().lines().last())
        val task = created.getString("task")
        val port = java.net.ServerSocket(0).use { it.localPort }
        val base = "http://127.0.0.1:$port"
        server = serve(ldp, port)
        awaitUp("$base/v1/tasks/$task")

        // 40 persistent clients, 50 reports each
        val storage = FileStateStorage(temp.resolve("clients"))
        val reports = (0 until 40).flatMap { c ->
            val encoder = RapporEncoder(spec, ClientStates.open(storage, "client-$c", spec))
            (0 until 50).map { i -> encoder.encode(listOf("a", "b", "c")[(c + i) % 3]).toJson() }
        }
        val spool = FileSpool(temp.resolve("spool/spool.jsonl"))
        var killed = false
        val options = UploaderOptions(
            batchSize = 100,
            retries = 10,
            flushDeadlineMillis = 90_000,
            fingerprint = spec.fingerprint,
            progress = { summary ->
                if (!killed && summary.batches == 3) { // kill -9 mid-upload, then start it again on the same store
                    killed = true
                    server!!.destroyForcibly().waitFor(10, TimeUnit.SECONDS)
                    server = serve(ldp, port)
                }
            },
        )
        val uploader = Uploader("$base/", task, spool, options)
        val records = uploader.enqueue(reports)
        val summary = uploader.flush()
        assertTrue(killed)
        assertTrue(summary.retries > 0, "the killed server made the uploader retry: $summary")
        assertEquals(reports.size, summary.accepted + summary.replayed, "$summary")
        assertEquals(emptyList<Rejected>(), summary.rejected)
        assertEquals(emptyList<String>(), spool.load())

        // records sent again (a crash before the spool was rewritten): the same bytes, counted replayed
        spool.append(records.take(10))
        val again = uploader.flush()
        assertEquals(listOf(0, 10), listOf(again.accepted, again.replayed))

        run(ldp.path, "task", "export", "--store", "db.sqlite", "--task", task, "-o", "stored.jsonl")
        val stored = Files.readAllLines(temp.resolve("stored.jsonl")).filter { it.isNotBlank() }
        assertEquals(reports.size, stored.size, "every report stored exactly once")
        assertEquals(reports.groupingBy { it }.eachCount(), stored.groupingBy { stripped(it) }.eachCount())
    }

    /** A stored report line in the form the client sent (the export may add fields such as the time). */
    private fun stripped(line: String): String {
        val o = JSONObject(line)
        return """{"v":1,"spec":"${o.getString("spec")}","cohort":${o.getLong("cohort")},"bits":"${o.getString("bits")}"}"""
    }
}
