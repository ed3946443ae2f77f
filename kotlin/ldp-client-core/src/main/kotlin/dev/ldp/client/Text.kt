package dev.ldp.client

/** Text shown in messages (the port of `js/src/text.ts`). */
public object Text {
    /** At most `max` characters of `text` (JSON-quoted when `quote`), with its full length when cut: errors never echo a huge value. */
    @JvmStatic
    @JvmOverloads
    public fun clip(text: String, max: Int = 80, quote: Boolean = false): String {
        val cut = text.length > max
        val part = if (cut) text.substring(0, max) else text
        val shown = if (quote) Json.quote(part, true) else part
        return if (cut) "$shown… (${text.length} characters)" else shown
    }

    /** True when `text` has no lone surrogate, so UTF-8 can encode it (Python refuses to encode a lone surrogate). */
    @JvmStatic
    public fun isWellFormed(text: String): Boolean {
        var i = 0
        while (i < text.length) {
            val c = text[i]
            if (Character.isHighSurrogate(c)) {
                if (i + 1 >= text.length || !Character.isLowSurrogate(text[i + 1])) return false
                i += 2
                continue
            }
            if (Character.isLowSurrogate(c)) return false
            i++
        }
        return true
    }
}
