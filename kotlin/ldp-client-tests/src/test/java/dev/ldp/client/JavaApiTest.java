package dev.ldp.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ldp.client.state.FileStateStorage;
import dev.ldp.client.state.StateKey;
import dev.ldp.client.state.StateStorage;
import dev.ldp.client.state.StateUpdate;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client's API as a Java app calls it: load a spec, encode with GRR, keep state in a file storage.
 * Written in Java so that a Kotlin-only signature (no {@code @JvmStatic}, {@code @JvmOverloads}, a
 * Kotlin function type) fails to compile here.
 */
class JavaApiTest {
    @TempDir
    Path dir;

    /** The GRR spec of the shared vectors, as a Java app would read it from a file or the collector. */
    private static String grrSpecText() throws Exception {
        String repo = System.getProperty("ldp.repo");
        String vectors = new String(Files.readAllBytes(new File(repo, "tests/vectors/vectors.json").toPath()), StandardCharsets.UTF_8);
        @SuppressWarnings("unchecked")
        Map<String, Object> all = (Map<String, Object>) Json.parse(vectors);
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> cases = (List<Map<String, Object>>) ((Map<String, Object>) all.get("specs")).get("cases");
        for (Map<String, Object> c : cases) {
            if ("grr/str".equals(c.get("id"))) return (String) c.get("canonical_json");
        }
        throw new AssertionError("no grr/str spec case in the vectors");
    }

    @Test
    void aJavaAppLoadsASpecAndEncodesWithGrr() throws Exception {
        Spec spec = Spec.load(grrSpecText());
        assertEquals("grr", spec.getMechanism());
        Encoder encoder = Registry.makeEncoder(spec); // the default options: the pooled SecureRandom
        List<Object> domain = spec.domain();
        Report report = encoder.encode(domain.get(0));
        assertEquals(spec.getFingerprint(), report.getSpec());
        assertTrue(domain.contains(report.getValue()), report.toJson());
        assertTrue(report.toJson().startsWith("{\"v\":1,\"spec\":\"" + spec.getFingerprint() + "\""), report.toJson());

        // the same with explicit options (EncoderOptions' @JvmOverloads constructor) and a fixed source
        Encoder fixed = Registry.makeEncoder(spec, new EncoderOptions(new FixedSource(new byte[64])));
        assertEquals(domain.get(0), fixed.encode(domain.get(0)).getValue()); // randbelow draws 0: the value is kept

        // errors are LdpExceptions (IllegalArgumentException), one line each
        IllegalArgumentException bad = assertThrows(ValueException.class, () -> encoder.encode("not-in-the-domain"));
        assertFalse(bad.getMessage().contains("\n"));
        assertThrows(SpecException.class, () -> Spec.load("{\"mechanism\":\"nope\",\"epsilon\":1.0}"));
        assertThrows(SpecException.class, () -> Spec.load(spec.getCanonicalJson(), "0000000000000000"));
    }

    @Test
    void aJavaAppKeepsClientStateInAFileStorage() throws Exception {
        Spec spec = Spec.load(grrSpecText());
        StateStorage storage = new FileStateStorage(dir.resolve("ldp-state").toFile());
        StateKey key = StateKey.state("alice");
        assertNull(storage.get(key));

        ClientState client = ClientState.create(spec); // a 32-byte CSPRNG secret and a cohort
        assertTrue(storage.create(key, client.getSecret()));
        assertFalse(storage.create(key, new byte[32]), "an existing client's state is never replaced");
        assertArrayEquals(client.getSecret(), storage.get(key));
        assertEquals(storage.get(key).length, 32);

        // a read-decide-write from Java: a counter record beside the state, changed with a lambda
        StateKey counter = StateKey.of("alice", "reports");
        for (int i = 0; i < 3; i++) {
            Integer now = storage.update(counter, current -> {
                int n = current == null ? 0 : Integer.parseInt(new String(current, StandardCharsets.UTF_8));
                return StateUpdate.write(Integer.toString(n + 1).getBytes(StandardCharsets.UTF_8), n + 1);
            });
            assertEquals(i + 1, now);
        }
        assertEquals("3", new String(storage.get(counter), StandardCharsets.UTF_8));
        assertTrue(storage.compareAndSet(counter, "3".getBytes(StandardCharsets.UTF_8), "0".getBytes(StandardCharsets.UTF_8)));
        assertFalse(storage.compareAndSet(counter, "3".getBytes(StandardCharsets.UTF_8), "9".getBytes(StandardCharsets.UTF_8)));

        // a fresh storage object (another run of the app) finds the same client
        StateStorage again = new FileStateStorage(dir.resolve("ldp-state"));
        assertArrayEquals(client.getSecret(), again.get(StateKey.state("alice")));
    }
}
