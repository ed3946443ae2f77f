package dev.ldp.client

import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/** JSON, fractions, values and reports beyond what the vectors cover. */
class CoreTest {
    @Test
    fun jsonKeepsPythonsNumberModel() {
        val v = Json.parseObject("""{"i": 18446744073709551617, "f": 1.0, "e": 1e3, "n": -0, "s": "\u00e9\ud83d\ude00", "l": [true, null]}""")
        assertEquals(BigInteger("18446744073709551617"), v["i"])
        assertEquals(1.0, v["f"])
        assertEquals(1000.0, v["e"])
        assertEquals(BigInteger.ZERO, v["n"])
        assertEquals("é😀", v["s"])
        assertEquals(listOf(true, null), v["l"])
        assertEquals("""{"e":1000.0,"f":1.0,"i":18446744073709551617,"l":[true,null],"n":0,"s":"é😀"}""", Json.dump(v))
    }

    @Test
    fun badJsonIsOneLineNamingThePosition() {
        for (text in listOf("{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\u0001\"", "\"\\x\"", "tru", "{} x", "")) {
            val e = assertFailsWith<LdpException>(text) { Json.parse(text) }
            assertTrue(e.message!!.startsWith("JSON: ") && "position" in e.message!!, e.message)
        }
    }

    @Test
    fun jsonStringsEscapeLineSeparatorsOnlyInReportLines() {
        assertEquals("\"a\u2028b\\n\\u0001\"", Json.quote("a\u2028b\n\u0001"))
        assertEquals("\"a\\u2028b\\u0085\"", Json.quote("a\u2028b\u0085", true))
    }

    @Test
    fun keysAreSortedByCodePoint() {
        // U+FF61 sorts before U+1F600 in UTF-16 order but after it by code point
        assertEquals("{\"\uFF61\":1,\"\uD83D\uDE00\":2}".let { Json.dump(Json.parse(it)) }, "{\"\uFF61\":1,\"\uD83D\uDE00\":2}")
    }

    @Test
    fun fractionsParseExactly() {
        assertEquals("39/100", Fraction.parse("0.39").toString())
        assertEquals("1/1000", Fraction.parse("1e-3").toString())
        assertEquals("3/4", Fraction.parse(" 6 / 8 ").toString())
        assertEquals("-2", Fraction.parse("-2").toString())
        assertEquals("3/4", Fraction.ofDouble(0.75).toString())
        assertEquals("1/10", Fraction.ofDouble(0.1).toString())
        assertEquals(0.1, Fraction.exactDouble(0.1).toDouble())
        for (bad in listOf("", ".", "1/0", "a", "1e999999999")) assertFailsWith<LdpException>(bad) { Fraction.parse(bad) }
    }

    @Test
    fun integersOnEitherSideOfTheLongRangeAreWrittenInDecimal() {
        for (text in listOf("0", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809", "18446744073709551616")) {
            assertEquals(text, Json.dump(BigInteger(text)))
            assertEquals("{\"v\":1,\"spec\":\"00\",\"seed\":$text}", Report("00", seed = BigInteger(text)).toJson())
        }
    }

    @Test
    fun aDomainIndexPrefersAStringValueToTheDecimalTextOfAnInteger() {
        val index = DomainIndex(listOf(BigInteger.valueOf(7), "7", BigInteger.valueOf(8), BigInteger.valueOf(7)))
        assertEquals(1, index.indexOf("7")) // the string value, not the integer 7's text
        assertEquals(0, index.indexOf(7L)) // the first of two equal integers
        assertEquals(0, index.indexOf(7.0))
        assertEquals(2, index.indexOf("8"))
        assertEquals(2, index.indexOf(8.0))
        assertFailsWith<ValueException> { index.indexOf("08") }
    }

    @Test
    fun aDomainIndexFindsDecimalTextAndIntegralFloatsButNotBooleans() {
        val index = DomainIndex(listOf(BigInteger.valueOf(7), "7x", BigInteger("18446744073709551616")))
        assertEquals(0, index.indexOf(7))
        assertEquals(0, index.indexOf("7"))
        assertEquals(0, index.indexOf(7.0))
        assertEquals(2, index.indexOf(1.8446744073709552E19))
        assertEquals(1, index.indexOf("7x"))
        val e = assertFailsWith<ValueException> { index.indexOf(true) }
        assertEquals("value \"True\" is not in the domain", e.message)
        assertFailsWith<ValueException> { index.indexOf(7.5) }
        assertFailsWith<ValueException> { index.indexOf(listOf(1)) }
    }

    @Test
    fun aLoneSurrogateIsRefusedAsValueBytes() {
        val e = assertFailsWith<ValueException> { Values.bytes("a\uD800") }
        assertTrue("lone surrogate" in e.message!!)
        assertEquals("True", Values.text(true))
        assertEquals("1e+16", Values.text(1e16))
    }

    @Test
    fun reportsRefuseWhatHasNoForm() {
        assertFailsWith<LdpException> { Report("0123456789abcdef", value = 1) }
        assertFailsWith<LdpException> { Report("0123456789abcdef", value = BigInteger.ONE.shiftLeft(63)).toBinary() }
        val extra = Report("0123456789abcdef", extra = listOf("row" to 3L, "f" to FloatField(1.0), "b" to byteArrayOf(1)))
        assertEquals("""{"v":1,"spec":"0123456789abcdef","row":3,"f":1.0,"b":"AQ=="}""", extra.toJson())
        val e = assertFailsWith<LdpException> { extra.toBinary() }
        assertEquals("report field row has no binary form", e.message)
    }

    @Test
    fun theEncodersRefuseValuesOutsideTheDomainWithOneLine() {
        val spec = Vectors.specs.getValue("grr/str")
        val e = assertFailsWith<ValueException> { Registry.makeEncoder(spec).encode("purple") }
        assertEquals("value \"purple\" is not in the domain", e.message)
        val unary = Vectors.specs.getValue("oue/int")
        assertFailsWith<ValueException> { Registry.makeEncoder(unary).encode(5) }
        assertEquals(4 * 1, Registry.makeEncoder(unary).encode(7).bits!!.size * 4)
    }

    @Test
    fun formatGWritesAsPythonsPercentG() {
        // (x, precision, Python's "%.*g" % (precision, x))
        for ((x, precision, text) in listOf(
            Triple(2.16e300, 3, "2.16e+300"), Triple(1.0, 6, "1"), Triple(24.0, 10, "24"), Triple(0.5, 6, "0.5"),
            Triple(123456789.0, 6, "1.23457e+08"), Triple(1e-5, 6, "1e-05"), Triple(0.0001234, 6, "0.0001234"),
            Triple(1.2345e-5, 3, "1.23e-05"), Triple(-2.5, 6, "-2.5"), Triple(0.0, 6, "0"),
        )) {
            assertEquals(text, FloatText.formatG(x, precision), "$x at $precision")
        }
    }

    @Test
    fun groupedWritesThousandsAsPython() {
        assertEquals("1,048,576", PrivacyFields.grouped(1L shl 20))
        assertEquals("999", PrivacyFields.grouped(999))
        assertEquals("16,777,216", PrivacyFields.grouped(BigInteger.ONE.shiftLeft(24)))
    }

    @Test
    fun domainLimitsAreGeneratedFromTheRegistry() {
        // grr's limit (Python's max_domain_size), checked before the family's checks
        assertEquals(1L shl 20, SpecFields.DOMAIN_LIMITS.getValue("grr").first)
        val big = mapOf("mechanism" to "grr", "domain" to (0..(1 shl 20)).map { BigInteger.valueOf(it.toLong()) }, "p" to "1/2")
        val e = assertFailsWith<SpecException> { PrivacyRegistry.mechanismPrivacy(big) }
        assertTrue(e.message!!.startsWith("grr: a domain of 1,048,577 values is above the limit of 1,048,576 ("), e.message)
    }
}
