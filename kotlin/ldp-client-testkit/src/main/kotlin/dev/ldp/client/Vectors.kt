package dev.ldp.client

import java.io.File

/**
 * The shared test vectors (`tests/vectors/vectors.json`, `numeric_tables.json`), read once with
 * [Json.parse] (Python's number model: integers [java.math.BigInteger], floats [Double]). The
 * repository root is the surefire system property `ldp.repo`.
 */
object Vectors {
    /** The repository root. */
    val repo: File by lazy {
        File(System.getProperty("ldp.repo") ?: error("the system property ldp.repo (the repository root) is not set"))
    }

    /** `tests/vectors/vectors.json`, parsed. */
    val all: JsonObject by lazy { read("tests/vectors/vectors.json") }

    /** `tests/vectors/numeric_tables.json`, parsed. */
    val numericTables: JsonObject by lazy { read("tests/vectors/numeric_tables.json") }

    private fun read(path: String): JsonObject = Json.parseObject(File(repo, path).readText(Charsets.UTF_8), path)

    /** A top-level section that is a list of cases. */
    fun cases(section: String): List<JsonObject> = list(all, section)

    /** A section that is an object. */
    fun section(section: String): JsonObject = obj(all, section)

    /** The loaded specs of `specs.cases` by id, for mechanisms this client can load (see [loadable]). */
    val specs: Map<String, Spec> by lazy {
        list(section("specs"), "cases").filter { loadableCase(it.str("id")) }
            .associate { it.str("id") to Spec.load(it.str("canonical_json"), it.str("fingerprint")) }
    }

    /** True when this client can load (check the claim of) specs of `mechanism`. */
    fun loadable(mechanism: String): Boolean = mechanism in PrivacyRegistry.CHECKED

    /** True when this client can load the spec case `id`: its mechanism's, and a composite spec's parts' (a record's attributes). */
    fun loadableCase(id: String): Boolean {
        val c = list(section("specs"), "cases").first { it.str("id") == id }
        return loadableFields(Json.parseObject(c.str("canonical_json")))
    }

    private fun loadableFields(fields: JsonObject): Boolean {
        if (!loadable(fields["mechanism"] as String)) return false
        @Suppress("UNCHECKED_CAST")
        val parts = fields["attributes"] as? List<JsonObject> ?: return true
        return parts.all { loadableFields(it) }
    }

    /**
     * The numeric table of spec case `id` (the `numeric` section), as the collector serves it: the whole
     * table from `numeric_tables.json` when the vectors abbreviate it; null for a spec with none.
     */
    fun numericTable(id: String): JsonObject? {
        val n = cases("numeric").firstOrNull { it.str("spec") == id } ?: return null
        if (n["full_table"] == null) return n
        check(n["full_table"] == "numeric_tables.json") { "numeric $id: full_table ${n["full_table"]}" }
        return obj(obj(numericTables, "tables"), id)
    }

    /**
     * What an `encodings` case gives its encoder: its byte source, its client (`secret`, `cohort`: a
     * memoized mechanism's state), a record's grid tables by attribute name (`tables`), a numeric spec's
     * table ([numericTable]).
     */
    fun encoderOptions(c: JsonObject, source: ByteSource): EncoderOptions {
        val client = if (c["secret"] == null) null else ClientState(c.hex("secret"), (c["cohort"] as java.math.BigInteger).toLong())
        @Suppress("UNCHECKED_CAST")
        val tables = c["tables"] as? Map<String, JsonObject> ?: emptyMap()
        return EncoderOptions(source = source, client = client, tables = tables, table = numericTable(c.str("spec")))
    }

    @Suppress("UNCHECKED_CAST")
    fun list(o: JsonObject, key: String): List<JsonObject> = o[key] as List<JsonObject>

    @Suppress("UNCHECKED_CAST")
    fun obj(o: JsonObject, key: String): JsonObject = o[key] as JsonObject
}

/** A string field of a vector case. */
fun JsonObject.str(key: String): String = this[key] as? String ?: error("vector field $key is not a string: ${this[key]}")

/** An integer field of a vector case (a JSON number or a decimal string). */
fun JsonObject.int(key: String): Int = when (val v = this[key]) {
    is java.math.BigInteger -> v.toInt()
    is String -> v.toInt()
    else -> error("vector field $key is not an integer: $v")
}

/** A list of integers of a vector case. */
fun JsonObject.ints(key: String): List<Int> = (this[key] as List<*>).map { (it as java.math.BigInteger).toInt() }

/** A hex field of a vector case, as bytes. */
fun JsonObject.hex(key: String): ByteArray = Bytes.fromHex(str(key))
