package dev.ldp.client.state

import java.nio.file.Files
import java.nio.file.Path
import java.nio.file.Paths
import java.security.SecureRandom

/**
 * A separate JVM racing others on one [FileStateStorage] (spawned by
 * [FileStateStorageProcessTest]): waits for the go file, then
 *
 * - `create DIR GO ID`: creates the client state of ID with a fresh 32-byte
 *   secret; prints `won <hex>` or `lost <hex>`, hex being what it then reads;
 * - `count DIR GO ID N`: N increments of a decimal counter record by `update`;
 *   prints `done`.
 */
object StateRaceMain {
    @JvmStatic
    fun main(args: Array<String>) {
        val storage = FileStateStorage(Paths.get(args[1]))
        val go: Path = Paths.get(args[2])
        val key = StateKey.state(args[3])
        while (!Files.exists(go)) Thread.sleep(1)
        when (args[0]) {
            "create" -> {
                val secret = ByteArray(32).also { SecureRandom().nextBytes(it) }
                val won = storage.create(key, secret)
                val stored = storage.get(key)!!
                println((if (won) "won " else "lost ") + stored.joinToString("") { "%02x".format(it.toInt() and 0xff) })
            }
            "count" -> {
                val counter = StateKey.of(args[3], "counter")
                repeat(args[4].toInt()) {
                    storage.update(counter) { current ->
                        val n = current?.toString(Charsets.US_ASCII)?.toInt() ?: 0
                        StateUpdate.write((n + 1).toString().toByteArray(Charsets.US_ASCII), Unit)
                    }
                }
                println("done")
            }
            else -> error("unknown command ${args[0]}")
        }
    }
}
