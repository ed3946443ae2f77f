package dev.ldp.client.state

import dev.ldp.client.Bytes
import dev.ldp.client.FixedSource
import dev.ldp.client.Spec
import dev.ldp.client.Vectors
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Files
import java.nio.file.Path
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertTrue

class ClientStatesTest {
    @TempDir
    lateinit var temp: Path

    private val grr: Spec = Vectors.specs.values.first { it.mechanism == "grr" }
    private val other: Spec = Vectors.specs.values.first { it.mechanism == "grr" && it.fingerprint != grr.fingerprint }

    @Test
    fun openCreatesOnceThenLoadsInPythonsFormat() {
        val storage = FileStateStorage(temp.resolve("s"))
        val source = FixedSource(ByteArray(64) { it.toByte() })
        val first = ClientStates.open(storage, "alice", grr, source)
        assertContentEquals(ByteArray(32) { it.toByte() }, first.secret)
        assertEquals(0L, first.cohort) // GRR has one cohort
        val again = ClientStates.open(storage, "alice", grr, FixedSource(ByteArray(64) { 9 }))
        assertContentEquals(first.secret, again.secret, "a restart keeps the secret")
        val text = String(Files.readAllBytes(storage.fileOf(StateKey.state("alice"))), Charsets.UTF_8)
        // json.dumps({...}, sort_keys=True) + "\n", as Python's ClientState writes it
        assertEquals(
            "{\"cohort\": 0, \"format\": \"ldp-client-state/1\", \"secret\": \"${Bytes.toHex(first.secret)}\", \"spec\": \"${grr.fingerprint}\"}\n",
            text,
        )
    }

    @Test
    fun aStateIsNeverReplacedWhateverItHolds() {
        val storage = FileStateStorage(temp.resolve("s"))
        ClientStates.open(storage, "bob", grr)
        val foreign = runCatching { ClientStates.open(storage, "bob", other) }.exceptionOrNull()
        assertTrue(foreign is StateException && "belongs to spec ${grr.fingerprint}, not ${other.fingerprint}" in foreign.message!!, "$foreign")
        val key = StateKey.state("carol")
        storage.put(key, Bytes.utf8("{\"cohort\": 0, \"format\": \"ldp-client"))
        val torn = runCatching { ClientStates.open(storage, "carol", grr) }.exceptionOrNull()
        assertTrue(torn is StateException && "corrupt or truncated" in torn.message!!, "$torn")
        assertEquals("{\"cohort\": 0, \"format\": \"ldp-client", String(storage.get(key)!!, Charsets.UTF_8), "left untouched")
        storage.put(key, Bytes.utf8("{\"cohort\": 3, \"format\": \"ldp-client-state/1\", \"secret\": \"${"00".repeat(32)}\", \"spec\": \"${grr.fingerprint}\"}\n"))
        val cohort = runCatching { ClientStates.load(storage, "carol", grr) }.exceptionOrNull()
        assertTrue(cohort is StateException && "cohort 3, outside [0, 1)" in cohort.message!!, "$cohort")
        val none = runCatching { ClientStates.load(storage, "nobody", grr) }.exceptionOrNull()
        assertTrue(none is StateException && none.message!!.startsWith("no client state: client state '"), "$none")
    }

    @Test
    fun aStateWrittenByPythonIsRead() {
        val storage = InMemoryStateStorage()
        // ClientState(spec=grr.fingerprint, secret=bytes(range(32)), cohort=0)._file_bytes() in Python
        val python = "{\"cohort\": 0, \"format\": \"ldp-client-state/1\", \"secret\": " +
            "\"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\", \"spec\": \"${grr.fingerprint}\"}\n"
        storage.put(StateKey.state("7"), Bytes.utf8(python))
        val state = ClientStates.open(storage, "7.0", grr) // the canonical id: one client
        assertContentEquals(ByteArray(32) { it.toByte() }, state.secret)
    }
}
