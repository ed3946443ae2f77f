package dev.ldp.client

import kotlin.test.Test
import kotlin.test.assertTrue

class VersionTest {
    @Test
    fun versionIsSemantic() {
        assertTrue(Regex("""\d+\.\d+\.\d+""").matches(LDP_CLIENT_VERSION))
    }
}
