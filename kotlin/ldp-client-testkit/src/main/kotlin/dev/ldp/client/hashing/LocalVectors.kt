package dev.ldp.client.hashing

import org.json.JSONArray
import org.json.JSONObject
import java.io.File

/**
 * Minimal reading of tests/vectors/vectors.json for the hashing tests (the
 * shared `Vectors` helper of the core was not there when these were written).
 */
internal object LocalVectors {
    val root: JSONObject by lazy {
        val repo = System.getProperty("ldp.repo") ?: error("system property ldp.repo is not set (run through Maven)")
        JSONObject(File(repo, "tests/vectors/vectors.json").readText(Charsets.UTF_8))
    }

    fun section(name: String): Any = root.get(name)

    fun objects(array: JSONArray): List<JSONObject> = (0 until array.length()).map { array.getJSONObject(it) }

    fun ints(array: JSONArray): List<Int> = (0 until array.length()).map { array.getInt(it) }

    /** The bytes of lowercase hex text. */
    fun hex(text: String): ByteArray {
        require(text.length % 2 == 0) { "odd hex length" }
        return ByteArray(text.length / 2) { text.substring(2 * it, 2 * it + 2).toInt(16).toByte() }
    }

    fun toHex(bytes: ByteArray): String = bytes.joinToString("") { "%02x".format(it.toInt() and 0xff) }

    /** The bytes of a JSON value as the vectors hash it (only text and integers occur here): UTF-8 or decimal. */
    fun valueBytes(value: Any): ByteArray = when (value) {
        is String -> value.toByteArray(Charsets.UTF_8)
        is Int, is Long, is java.math.BigInteger -> value.toString().toByteArray(Charsets.US_ASCII)
        else -> error("no bytes for a ${value.javaClass.simpleName} in these tests")
    }

    /** The spec case `id` of `specs.cases`, as its canonical JSON object. */
    fun spec(id: String): JSONObject {
        val cases = root.getJSONObject("specs").getJSONArray("cases")
        val case = objects(cases).first { it.getString("id") == id }
        return JSONObject(case.getString("canonical_json"))
    }
}
