package dev.ldp.client.mechanisms

import dev.ldp.client.ByteSource
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.EncoderOptions
import dev.ldp.client.FloatField
import dev.ldp.client.Json
import dev.ldp.client.JsonObject
import dev.ldp.client.BitReader
import dev.ldp.client.ReportBits
import dev.ldp.client.RunSampler
import dev.ldp.client.Lanes
import dev.ldp.client.LdpException
import dev.ldp.client.Packing
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.Text
import dev.ldp.client.ValueException
import java.math.BigInteger

/**
 * Multi-attribute records (the port of `js/src/multiattr.ts`; `ldp/specs/multiattr.py`): one report per
 * record, each reported attribute by its own mechanism's encoder, byte for byte as the Python client.
 * `smp` draws k of the d attributes (a partial Fisher–Yates shuffle, one uniform(d − t) per draw) and
 * sends their bits `sampled` and their reports; `spl` reports every attribute; `rsfd-grr` draws the
 * attribute reported by GRR and gives every other a uniform fake value; `rsfd-{sue,oue}-z` report the
 * drawn attribute by unary encoding and every other as the zero vector perturbed, `-r` as the UE report
 * of a uniform value (one uniform(k_j) each, in attribute order). Every value of the record is
 * checked, sampled or not. Attribute j's report fields are the record report's declared fields
 * `a{j}_<field>` (a numeric output as a float).
 *
 * A numeric attribute is reported by [NumericEncoder]: Duchi's and stochastic rounding's tables follow
 * from the spec; a grid mechanism's (piecewise, hybrid, Laplace, Gaussian) is the server's, given as
 * `options.tables[name]` (the `attributes` of `GET /v1/tasks/{task}/tables`) and checked against its
 * digest and the attribute's ε. Categorical attributes (and 1BitMean) get the encoder `parts` makes.
 *
 * @mechanisms multi-attribute
 */
public class MultiAttributeEncoder private constructor(
    override val spec: Spec,
    private val source: ByteSource,
    options: EncoderOptions,
    parts: (Spec) -> Encoder,
) : Encoder {
    /** The attribute names, in order. */
    public val names: List<String>

    /** Per attribute: its domain (categorical), or null (a number). */
    private val indexes: List<DomainIndex?>
    private val encoders: List<Encoder>
    private val method = spec.string("method")
    private val sample = spec.intValue("sample")

    /** RS+FD over SUE/OUE: per attribute its lane sampler over (p, q), as [UnaryEncoder] builds it. */
    private val unary: List<RunSampler>?

    /** The source's bit reader: the record's own draws and its attributes' encoders share it. */
    private val bits = ReportBits.reader(source)

    init {
        @Suppress("UNCHECKED_CAST")
        val attributes = spec.fields["attributes"] as List<JsonObject>
        names = attributes.map { it["name"] as String }
        indexes = attributes.map { a -> (a["domain"] as? List<*>)?.let { DomainIndex(it) } }
        encoders = attributes.mapIndexed { j, attribute ->
            val part = Spec.load(attribute.filterKeys { it != "name" })
            if (indexes[j] != null) parts(part) else numericPart(names[j], part, options, parts)
        }
        unary = if (method in RSFD_UNARY) {
            attributes.map { a ->
                val part = Spec.load(a.filterKeys { it != "name" })
                RunSampler(part.domain().size, listOf(part.fraction("p"), part.fraction("q")))
            }
        } else {
            null
        }
        for (name in options.tables.keys) {
            val j = names.indexOf(name)
            if (j < 0 || attributes[j]["mechanism"] !in SERVER_TABLES) {
                throw SpecException(
                    "multi-attribute: a table is given for ${Json.quote(Text.clip(name))}, which is not an attribute of a grid mechanism (${names.joinToString(", ")})",
                )
            }
        }
    }

    /** The encoder of numeric attribute `name`: [NumericEncoder] with its table (two-point: the spec's own). */
    private fun numericPart(name: String, part: Spec, options: EncoderOptions, parts: (Spec) -> Encoder): Encoder {
        if (part.mechanism == "duchi" || part.mechanism == "stochastic-rounding") return NumericEncoder(part, NumericTable.twoPoint(part), source)
        if (part.mechanism !in SERVER_TABLES) return parts(part) // a numeric mechanism whose spec holds its probabilities (1BitMean)
        val quoted = Json.quote(name)
        val table = options.tables[name] ?: throw SpecException(
            "multi-attribute: attribute $quoted (${part.mechanism}) needs the server's sampling table: " +
                "pass EncoderOptions(tables = mapOf($quoted to ...)) from GET /v1/tasks/{task}/tables",
        )
        if (table["digest"] == null) throw SpecException("multi-attribute: attribute $quoted: its table has no digest")
        try {
            return NumericEncoder(part, NumericTable.fromJson(table), source)
        } catch (e: LdpException) {
            throw SpecException("multi-attribute: attribute $quoted: ${e.message}")
        }
    }

    /** The record as its values in attribute order: a map by attribute name, or a list of d values. */
    private fun record(value: Any): List<Any?> {
        val record: List<Any?> = when (value) {
            is List<*> -> {
                if (value.size != names.size) throw ValueException("record has ${value.size} values, the spec ${names.size} attributes")
                value
            }
            is Map<*, *> -> {
                val missing = names.firstOrNull { !value.containsKey(it) }
                if (missing != null) throw ValueException("record has no ${Json.quote(missing)} (the spec's attributes: ${names.joinToString(", ")})")
                names.map { value[it] }
            }
            else -> throw ValueException("a multi-attribute input is a record (a map of ${names.joinToString(", ")}), got ${value.javaClass.simpleName}")
        }
        record.forEachIndexed { j, v ->
            try {
                val index = indexes[j]
                if (index == null) recordNumber(v) else index.indexOf(v)
            } catch (e: LdpException) {
                throw ValueException("attribute ${Json.quote(names[j])}: ${e.message}")
            }
        }
        return record
    }

    private fun sampled(): List<Int> {
        val d = names.size
        val order = IntArray(d) { it }
        for (t in 0 until sample) {
            val pick = if (d - t > 1) t + ReportBits.uniform((d - t).toLong(), bits).toInt() else t
            val swap = order[t]
            order[t] = order[pick]
            order[pick] = swap
        }
        return order.take(sample).sorted()
    }

    override fun encode(value: Any): Report {
        val record = record(value)
        val d = names.size
        val extra = ArrayList<Pair<String, Any>>()
        if (method == "rsfd-grr") {
            val chosen = ReportBits.uniform(d.toLong(), bits).toInt()
            for (j in 0 until d) {
                val domain = indexes[j]!!.domain // rsfd-grr: every attribute is categorical (GRR)
                val reported = if (j == chosen) encoders[j].encode(record[j]!!).value!!
                else domain[ReportBits.uniform(domain.size.toLong(), bits).toInt()]
                extra.add("a${j}_value" to reported)
            }
            return Report(spec.fingerprint, extra = extra)
        }
        if (unary != null) {
            val chosen = ReportBits.uniform(d.toLong(), bits).toInt()
            for (j in 0 until d) {
                val index = indexes[j]!! // RS+FD: every attribute is categorical (SUE or OUE)
                val hot: Int? = when {
                    j == chosen -> index.indexOf(record[j]!!)
                    method.endsWith("-z") -> null
                    else -> ReportBits.uniform(index.size.toLong(), bits).toInt()
                }
                extra.add("a${j}_bits" to perturb(unary[j], index.size, hot))
            }
            return Report(spec.fingerprint, extra = extra)
        }
        val sampled = if (method == "spl") (0 until d).toList() else sampled()
        if (method == "smp") {
            val bits = ByteArray((d + 7) / 8)
            for (j in sampled) bits[j shr 3] = (bits[j shr 3].toInt() or (0x80 ushr (j and 7))).toByte()
            extra.add("sampled" to bits)
        }
        for (j in sampled) {
            for ((name, field) in partFields(encoders[j].encode(record[j]!!))) extra.add("a${j}_$name" to field)
        }
        return Report(spec.fingerprint, extra = extra)
    }

    /** The packed bits of the one-hot vector of index `i` perturbed (null: the zero vector), as [UnaryEncoder]'s. */
    private fun perturb(sampler: RunSampler, width: Int, i: Int?): ByteArray {
        val oneHot = if (i == null) LongArray(Lanes.fullWords(width).size) else Lanes.oneLane(i, width)
        val others = Lanes.fullWords(width)
        if (i != null) others[i ushr 6] = others[i ushr 6] xor oneHot[i ushr 6]
        return Packing.wordsToPacked(sampler.sample(arrayOf(oneHot, others), bits), width)
    }

    public companion object {
        /** The RS+FD methods over unary encoding (every attribute's bits in every report). */
        private val RSFD_UNARY = setOf("rsfd-sue-z", "rsfd-sue-r", "rsfd-oue-z", "rsfd-oue-r")

        /** Mechanisms whose sampling table is the server's (`GET /v1/tasks/{task}/tables`), never rebuilt here. */
        private val SERVER_TABLES = setOf("piecewise", "hybrid", "laplace", "gaussian")

        /** The encoder [dev.ldp.client.Registry.makeEncoder] gives: each attribute's encoder from `parts` (categorical) or its numeric table. */
        @JvmStatic
        public fun create(spec: Spec, source: ByteSource, options: EncoderOptions, parts: (Spec) -> Encoder): Encoder =
            MultiAttributeEncoder(spec, source, options, parts)

        /** The fields of a part's report, in the order of its JSON form (Python's schema order); a numeric output stays a float. */
        private fun partFields(report: Report): List<Pair<String, Any>> {
            val out = ArrayList<Pair<String, Any>>()
            report.cohort?.let { out.add("cohort" to it) }
            report.seed?.let { out.add("seed" to it) }
            report.value?.let { out.add("value" to if (it is Double) FloatField(it) else it) }
            out.addAll(report.extra)
            report.bits?.let { out.add("bits" to it) }
            return out
        }

        /** A numeric attribute's value: a finite number (text is refused, as Python's `check_numeric_value`: parse it first). */
        private fun recordNumber(value: Any?) {
            if (value is String) {
                throw ValueException("numeric value must be a number, got the text ${Json.quote(Text.clip(value, 80))} (parse text first)")
            }
            NumericEncoder.toDouble(value ?: throw ValueException("numeric value must be a number, got null"))
        }
    }
}
