package dev.ldp.client.cli

import dev.ldp.client.Claim
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Json
import dev.ldp.client.JsonObject
import dev.ldp.client.LDP_CLIENT_VERSION
import dev.ldp.client.LdpException
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.Text
import dev.ldp.client.budget.Budget
import dev.ldp.client.budget.BudgetExceededException
import dev.ldp.client.budget.BudgetedEncoder
import dev.ldp.client.mechanisms.NumericEncoder
import dev.ldp.client.state.ClientStates
import dev.ldp.client.state.FileStateStorage
import java.io.BufferedWriter
import java.io.IOException
import java.io.InputStream
import java.io.OutputStreamWriter
import java.io.PrintStream
import java.nio.ByteBuffer
import java.nio.charset.CharacterCodingException
import java.nio.charset.CodingErrorAction
import java.nio.file.Files
import java.nio.file.NoSuchFileException
import java.nio.file.Paths
import kotlin.system.exitProcess

/**
 * The command-line encoder of the Kotlin client, with the contract of the TypeScript `ldp-encode`
 * (`js/src/cli.ts`) and of what `ldp audit --encoder-cmd` runs:
 *
 * ```
 * java -cp CLASSPATH dev.ldp.client.cli.Main --spec SPEC.json [VALUES.txt | -] [--table TABLE.json]
 * ```
 *
 * (CLASSPATH: this library's JAR and its runtime dependencies, which `mvn package` copies to `target/lib`.)
 *
 * Values are read one per line (UTF-8, a byte-order mark dropped, LF or CR LF) from the file, or from
 * standard input when the file is `-` or absent; each is a string, as `ldp encode` reads a text file
 * (an integer domain finds its values by their decimal text); a spec of numbers (a range, no domain)
 * reads each line as a decimal number, surrounding spaces allowed, as `ldp encode` does.
 * One report JSON line per value goes to standard output, in order, every coin from `SecureRandom`;
 * a memoized mechanism's value gets a fresh client (a new secret) per line, so each line is one
 * client's first report.
 *
 * - `--table FILE`: a numeric grid spec's (piecewise, hybrid, Laplace, Gaussian) sampling table, the
 *   JSON the collector serves for it (Python's `ldp.numeric_wire.numeric_table`), checked against its
 *   digest and the spec's ε.
 * - `--state DIR --client ID`: one persistent client, its files in DIR named as `ldp encode --state DIR`
 *   names those of a CSV row whose `client_id` is ID ([FileStateStorage]): a memoized mechanism's
 *   secret and cohort ([ClientStates], created once), and its privacy ledger when it has one.
 * - `--budget EPS [--budget-delta D] [--composition basic|optimal]` (needs `--state`): the budget of a
 *   client that has no ledger yet; once its ledger exists every report is charged to it under the
 *   stored budget, with or without `--budget` ([BudgetedEncoder.forClient]), and another `--budget` is
 *   an error. A value the budget refuses emits nothing; the run then ends with exit status 3.
 * - `--list-mechanisms`: print the mechanisms this client encodes, one per line, and exit.
 * - `--version`: print the library's version and exit.
 *
 * Errors are one line on standard error (`ldp-encode: ...`, naming the line of a bad value) with exit
 * status 2; nothing is written to standard output for a run that fails before its first report.
 * Values refused by the client's budget: exit status 3 after the others' reports.
 */
public object Main {
    private const val USAGE = "usage: java dev.ldp.client.cli.Main --spec SPEC.json [VALUES.txt | -] [--table TABLE.json] " +
        "[--state DIR --client ID [--budget EPS [--budget-delta D] [--composition basic|optimal]]] | --list-mechanisms | --version"
    private val OPTIONS = setOf("--spec", "--table", "--state", "--client", "--budget", "--budget-delta", "--composition")
    private const val FLUSH_EVERY = 4096

    /** Run the command with [args]; exits the JVM with status 0 (done), 2 (an error, one line on standard error) or 3 (values the budget refused). */
    @JvmStatic
    public fun main(args: Array<String>) {
        val status = run(args, System.`in`, System.out, System.err)
        System.out.flush()
        exitProcess(status)
    }

    /**
     * Run the command with [args], reading values from [stdin] when no file is given, writing reports to
     * [stdout] and messages to [stderr]; the exit status (0; 2 after one error line; 3 when the budget
     * refused values).
     */
    @JvmStatic
    public fun run(args: Array<String>, stdin: InputStream, stdout: PrintStream, stderr: PrintStream): Int =
        try {
            execute(args, stdin, stdout, stderr)
        } catch (e: UsageException) {
            stderr.println("ldp-encode: ${e.message}")
            2
        } catch (e: LdpException) {
            stderr.println("ldp-encode: ${e.message}")
            2
        } catch (e: IOException) {
            stderr.println("ldp-encode: ${e.message ?: e.javaClass.simpleName}")
            2
        } catch (e: RuntimeException) { // a fault of this client: still one line, naming its type
            stderr.println("ldp-encode: internal error (${e.javaClass.name}): ${e.message}")
            2
        }

    private class UsageException(message: String) : Exception(message)

    private class Arguments(val options: Map<String, String>, val input: String?, val flag: String?)

    private fun parse(args: Array<String>): Arguments {
        val options = LinkedHashMap<String, String>()
        val positional = ArrayList<String>()
        var flag: String? = null
        var i = 0
        while (i < args.size) {
            val arg = args[i]
            when {
                arg in OPTIONS -> {
                    if (i + 1 >= args.size) throw UsageException("$arg needs a value")
                    if (options.put(arg, args[i + 1]) != null) throw UsageException("$arg given twice")
                    i++
                }
                arg == "--list-mechanisms" || arg == "--version" -> flag = arg
                arg == "-h" || arg == "--help" -> throw UsageException(USAGE)
                arg.startsWith("--") -> throw UsageException("unknown option ${Text.clip(arg, 40, true)}")
                else -> positional.add(arg)
            }
            i++
        }
        if (flag != null) {
            if (options.isNotEmpty() || positional.isNotEmpty()) throw UsageException("$flag takes no other arguments")
            return Arguments(options, null, flag)
        }
        if ("--spec" !in options || positional.size > 1) throw UsageException(USAGE)
        if (("--state" in options) != ("--client" in options)) {
            throw UsageException("--state and --client go together (the client's files are named by its id, as ldp encode --state names a row's client_id)")
        }
        if (options["--client"]?.isEmpty() == true) throw UsageException("--client is empty")
        if ("--budget" in options && "--state" !in options) throw UsageException("--budget needs --state (the ledger lives beside the state)")
        if (("--budget-delta" in options || "--composition" in options) && "--budget" !in options) {
            throw UsageException("--budget-delta and --composition go with --budget (a client's existing ledger keeps its stored budget)")
        }
        return Arguments(options, positional.firstOrNull(), null)
    }

    private fun execute(args: Array<String>, stdin: InputStream, stdout: PrintStream, stderr: PrintStream): Int {
        val parsed = parse(args)
        when (parsed.flag) {
            "--list-mechanisms" -> {
                Registry.ENCODED.forEach { stdout.println(it) }
                return 0
            }
            "--version" -> {
                stdout.println(LDP_CLIENT_VERSION)
                return 0
            }
        }
        val spec = Spec.load(readUtf8(parsed.options.getValue("--spec"), "spec", null))
        if (spec.fields["attributes"] is List<*>) {
            throw UsageException("${spec.mechanism} reads records (one column per attribute), which this command does not; encode them with MultiAttributeEncoder")
        }
        val table = parsed.options["--table"]?.let { readTable(it) }
        val options = EncoderOptions(table = table)
        val memoized = Claim.privacyFacts(spec.fields).memoized // a fresh client (secret) per value
        val budget = parsed.options["--budget"]?.let { budgetOf(it, parsed.options["--budget-delta"], parsed.options["--composition"]) }
        val shared = parsed.options["--state"]?.let { persistentClient(spec, options, memoized, it, parsed.options.getValue("--client"), budget) }
            ?: if (memoized) null else Registry.makeEncoder(spec, options)
        // a spec of numbers (a range, no domain) reads each line as a number, as `ldp encode` does (parse_numeric_text)
        val numeric = "low" in spec.fields && "high" in spec.fields && "domain" !in spec.fields
        val input = parsed.input?.takeIf { it != "-" }
        val lines = lines(readUtf8(input, "input file", stdin))
        val out = BufferedWriter(OutputStreamWriter(stdout, Charsets.UTF_8), 1 shl 16)
        var refused = 0
        lines.forEachIndexed { i, line ->
            val report = try {
                (shared ?: Registry.makeEncoder(spec, options)).encode(if (numeric) NumericEncoder.toDouble(line) else line)
            } catch (e: BudgetExceededException) {
                refused++ // charged nothing, released nothing
                null
            } catch (e: LdpException) {
                out.flush()
                throw LdpException("line ${i + 1}: ${e.message}")
            }
            if (report != null) {
                out.write(report.toJson())
                out.write('\n'.code)
            }
            if ((i + 1) % FLUSH_EVERY == 0) out.flush()
        }
        out.flush()
        stderr.println("encoded ${lines.size - refused} values with ${spec.mechanism} (${spec.fingerprint})")
        if (refused == 0) return 0
        stderr.println("$refused lines refused: the client's privacy budget would be exceeded; nothing was emitted for them")
        return 3
    }

    /** The `--budget` options as a [Budget] (its own checks give the one-line errors). */
    private fun budgetOf(epsilon: String, delta: String?, composition: String?): Budget {
        fun number(option: String, text: String): Double =
            text.trim().toDoubleOrNull() ?: throw UsageException("$option must be a number, got ${Text.clip(text, 40, true)}")
        return Budget(number("--budget", epsilon), delta?.let { number("--budget-delta", it) } ?: 0.0, composition ?: "basic")
    }

    /**
     * The encoder of the persistent client [clientId] in [directory]: a memoized mechanism's state from
     * [ClientStates] (created once), charging the client's ledger whenever it has one or [budget] creates it.
     */
    private fun persistentClient(spec: Spec, options: EncoderOptions, memoized: Boolean, directory: String, clientId: String, budget: Budget?): dev.ldp.client.Encoder {
        val storage = FileStateStorage(Paths.get(directory))
        val encoderOptions = if (memoized) EncoderOptions(client = ClientStates.open(storage, clientId, spec), table = options.table) else options
        return BudgetedEncoder.forClient(Registry.makeEncoder(spec, encoderOptions), storage, clientId, budget)
    }

    /** A numeric grid spec's table file: the JSON object of `numeric_table` (or a tables reply's one table). */
    private fun readTable(file: String): JsonObject {
        val data = Json.parse(readUtf8(file, "--table", null))
        @Suppress("UNCHECKED_CAST")
        return data as? JsonObject ?: throw UsageException("--table $file: expected a JSON object (a numeric spec's sampling table)")
    }

    /** Lines of a text (a byte-order mark dropped, LF or CR LF, no last empty line), as Python's `read_lines`. */
    private fun lines(text: String): List<String> {
        val body = text.removePrefix("\uFEFF")
        val out = body.split('\n').toMutableList()
        if (out.last().isEmpty()) out.removeAt(out.size - 1)
        return out.map { it.removeSuffix("\r") }
    }

    /** The text of [file] (standard input when null), strictly UTF-8: a bad byte is an error naming its line, never U+FFFD. */
    private fun readUtf8(file: String?, what: String, stdin: InputStream?): String {
        val data = try {
            if (file == null) stdin!!.readBytes() else Files.readAllBytes(Paths.get(file))
        } catch (e: NoSuchFileException) {
            throw UsageException("cannot read $what '$file': no such file")
        } catch (e: IOException) {
            throw UsageException("cannot read $what '${file ?: "-"}': ${e.message ?: e.javaClass.simpleName}")
        }
        val decoder = Charsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT)
        val buffer = ByteBuffer.wrap(data)
        return try {
            decoder.decode(buffer).toString()
        } catch (_: CharacterCodingException) {
            val bad = firstBadByte(data)
            val lineStart = (bad - 1 downTo 0).firstOrNull { data[it] == '\n'.code.toByte() }?.plus(1) ?: 0
            val line = 1 + (0 until lineStart).count { data[it] == '\n'.code.toByte() }
            val hex = "%02x".format(data[bad].toInt() and 0xff)
            throw UsageException("$what '${file ?: "-"}', line $line: not UTF-8 text (byte 0x$hex at column ${bad - lineStart + 1}); save it as UTF-8")
        }
    }

    /** The index of the lead byte of the first sequence that is not UTF-8. */
    private fun firstBadByte(data: ByteArray): Int {
        val decoder = Charsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT)
        val input = ByteBuffer.wrap(data)
        val output = java.nio.CharBuffer.allocate(data.size + 1)
        val result = decoder.decode(input, output, true)
        return if (result.isError) input.position() else data.size - 1
    }
}
