/**
 * The package's own hash functions (src/hash/): SHA-256, HMAC-SHA-256, MD5
 * and SHAKE-256, against the standards' published examples and constant
 * tables, Node's OpenSSL (`node:crypto`) and `@noble/hashes` (a development
 * dependency here: an independent implementation), at every length around
 * their block boundaries (64 bytes for SHA-256 and MD5, the rate of 136 bytes
 * for SHAKE-256, on input and on output).
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { describe, it } from "node:test";
import { shake256 as nobleShake } from "@noble/hashes/sha3.js";
import { hmacSha256 } from "../src/hash/hmac.js";
import { md5, md5Table } from "../src/hash/md5.js";
import { sha256, sha256Constants } from "../src/hash/sha256.js";
import { KECCAK_CYCLE, KECCAK_IOTA, KECCAK_ROTATION, SHAKE256_RATE, shake256 } from "../src/hash/shake256.js";
import { defaultShake256, jsShake256, nobleShake256, toHex, utf8 } from "../src/index.js";

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");
/** `n` bytes that differ from block to block (no period of 64 or 136). */
const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (i * 37 + (i >> 7) + 11) & 0xff);
const word = (x: number): string => (x >>> 0).toString(16).padStart(8, "0");

/** Lengths around each boundary of a b-byte block up to three blocks (with the 9 padding bytes of SHA-256 and MD5). */
const around = (b: number, pad: number): number[] =>
  [...new Set([0, 1, 2, 3, 4, 5, 7, 8].flatMap((d) => [1, 2, 3].flatMap((k) => [k * b - pad - d, k * b - pad + d, k * b - d, k * b + d])))]
    .filter((n) => n >= 0)
    .sort((a, b) => a - b);

describe("sha256", () => {
  it("gives FIPS 180-2's examples (one block, two blocks, a million a's)", () => {
    assert.equal(hex(sha256(utf8("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert.equal(hex(sha256(new Uint8Array(0))), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert.equal(
      hex(sha256(utf8("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
    assert.equal(hex(sha256(new Uint8Array(1_000_000).fill(0x61))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  });

  it("computes FIPS 180-4's constants K and H(0) (cube and square roots of the primes) exactly", () => {
    const { k, h0 } = sha256Constants();
    assert.deepEqual([...k].map(word), [
      "428a2f98", "71374491", "b5c0fbcf", "e9b5dba5", "3956c25b", "59f111f1", "923f82a4", "ab1c5ed5",
      "d807aa98", "12835b01", "243185be", "550c7dc3", "72be5d74", "80deb1fe", "9bdc06a7", "c19bf174",
      "e49b69c1", "efbe4786", "0fc19dc6", "240ca1cc", "2de92c6f", "4a7484aa", "5cb0a9dc", "76f988da",
      "983e5152", "a831c66d", "b00327c8", "bf597fc7", "c6e00bf3", "d5a79147", "06ca6351", "14292967",
      "27b70a85", "2e1b2138", "4d2c6dfc", "53380d13", "650a7354", "766a0abb", "81c2c92e", "92722c85",
      "a2bfe8a1", "a81a664b", "c24b8b70", "c76c51a3", "d192e819", "d6990624", "f40e3585", "106aa070",
      "19a4c116", "1e376c08", "2748774c", "34b0bcb5", "391c0cb3", "4ed8aa4a", "5b9cca4f", "682e6ff3",
      "748f82ee", "78a5636f", "84c87814", "8cc70208", "90befffa", "a4506ceb", "bef9a3f7", "c67178f2",
    ]);
    assert.deepEqual([...h0].map(word), ["6a09e667", "bb67ae85", "3c6ef372", "a54ff53a", "510e527f", "9b05688c", "1f83d9ab", "5be0cd19"]);
  });

  it("equals Node's SHA-256 at every length around the 64-byte blocks and the 9 padding bytes", () => {
    for (const n of [...around(64, 9), 1000, 4099]) {
      const data = bytes(n);
      assert.equal(hex(sha256(data)), createHash("sha256").update(data).digest("hex"), `${n} bytes`);
    }
  });

  it("reads only the bytes of a view, not the rest of its buffer", () => {
    const buffer = bytes(200);
    const view = buffer.subarray(17, 117);
    assert.equal(hex(sha256(view)), createHash("sha256").update(view).digest("hex"));
  });
});

describe("hmacSha256", () => {
  it("gives RFC 4231's test cases 1, 2, 3, 4, 6 and 7 (keys shorter than, and longer than, a block)", () => {
    const cases: [Uint8Array, Uint8Array, string][] = [
      [new Uint8Array(20).fill(0x0b), utf8("Hi There"), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"],
      [utf8("Jefe"), utf8("what do ya want for nothing?"), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"],
      [new Uint8Array(20).fill(0xaa), new Uint8Array(50).fill(0xdd), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"],
      [
        Uint8Array.from({ length: 25 }, (_, i) => i + 1),
        new Uint8Array(50).fill(0xcd),
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
      ],
      [
        new Uint8Array(131).fill(0xaa),
        utf8("Test Using Larger Than Block-Size Key - Hash Key First"),
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
      ],
      [
        new Uint8Array(131).fill(0xaa),
        utf8(
          "This is a test using a larger than block-size key and a larger than block-size data. " +
            "The key needs to be hashed before being used by the HMAC algorithm.",
        ),
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
      ],
    ];
    for (const [key, data, mac] of cases) assert.equal(hex(hmacSha256(key, data)), mac);
  });

  it("equals Node's HMAC for keys of 0 to 130 bytes and messages around the block", () => {
    for (const keyLength of [0, 1, 31, 32, 63, 64, 65, 130]) {
      for (const n of [0, 1, 55, 56, 64, 119, 200]) {
        const key = bytes(keyLength).reverse();
        const data = bytes(n);
        assert.equal(hex(hmacSha256(key, data)), createHmac("sha256", key).update(data).digest("hex"), `key ${keyLength}, message ${n}`);
      }
    }
  });
});

describe("md5", () => {
  it("gives RFC 1321's test suite", () => {
    const suite: [string, string][] = [
      ["", "d41d8cd98f00b204e9800998ecf8427e"],
      ["a", "0cc175b9c0f1b6a831c399e269772661"],
      ["abc", "900150983cd24fb0d6963f7d28e17f72"],
      ["message digest", "f96b697d7cb7938d525a2f31aaf161d0"],
      ["abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"],
      ["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"],
      ["1234567890".repeat(8), "57edf4a22be3c955ac49da2e2107b67a"],
    ];
    for (const [text, digest] of suite) assert.equal(hex(md5(utf8(text))), digest, JSON.stringify(text));
  });

  it("computes RFC 1321's table T (⌊2^32·|sin i|⌋) exactly", () => {
    assert.deepEqual([...md5Table()].map(word), [
      "d76aa478", "e8c7b756", "242070db", "c1bdceee", "f57c0faf", "4787c62a", "a8304613", "fd469501",
      "698098d8", "8b44f7af", "ffff5bb1", "895cd7be", "6b901122", "fd987193", "a679438e", "49b40821",
      "f61e2562", "c040b340", "265e5a51", "e9b6c7aa", "d62f105d", "02441453", "d8a1e681", "e7d3fbc8",
      "21e1cde6", "c33707d6", "f4d50d87", "455a14ed", "a9e3e905", "fcefa3f8", "676f02d9", "8d2a4c8a",
      "fffa3942", "8771f681", "6d9d6122", "fde5380c", "a4beea44", "4bdecfa9", "f6bb4b60", "bebfbc70",
      "289b7ec6", "eaa127fa", "d4ef3085", "04881d05", "d9d4d039", "e6db99e5", "1fa27cf8", "c4ac5665",
      "f4292244", "432aff97", "ab9423a7", "fc93a039", "655b59c3", "8f0ccc92", "ffeff47d", "85845dd1",
      "6fa87e4f", "fe2ce6e0", "a3014314", "4e0811a1", "f7537e82", "bd3af235", "2ad7d2bb", "eb86d391",
    ]);
  });

  it("equals Node's MD5 at every length around the 64-byte blocks and the 9 padding bytes", () => {
    for (const n of [...around(64, 9), 1000, 4099]) {
      const data = bytes(n);
      assert.equal(hex(md5(data)), createHash("md5").update(data).digest("hex"), `${n} bytes`);
    }
  });
});

describe("shake256", () => {
  const node = (data: Uint8Array, n: number): string => createHash("shake256", { outputLength: n }).update(data).digest("hex");

  it("gives NIST's examples (the empty message, 'abc', 200 bytes 0xA3)", () => {
    assert.equal(hex(shake256(new Uint8Array(0)).read(32)), "46b9dd2b0ba88d13233b3feb743eeb243fcd52ea62b81b82b50c27646ed5762f");
    assert.equal(
      hex(shake256(utf8("abc")).read(64)),
      "483366601360a8771c6863080cc4114d8db44530f8f1e1ee4f94ea37e78b5739d5a15bef186a5386c75744c0527e1faa9f8726e462a12a4feb06bd8801e751e4",
    );
    assert.equal(hex(shake256(new Uint8Array(200).fill(0xa3)).read(32)), "cd8a920ed141aa0407a22d59288652e9d9f1a7ee0c1e7c1ca699424da84a904d");
  });

  it("computes FIPS 202's ρ offsets, π positions and ι round constants (the Keccak team's tables)", () => {
    assert.equal(SHAKE256_RATE, 136);
    // the cycle visits lanes 1 … 24 once each, from lane 1, and ends back at lane 1
    const lanes = [1, ...KECCAK_CYCLE];
    assert.equal(lanes[24], 1);
    assert.deepEqual(lanes.slice(0, 24).sort((a, b) => a - b), Array.from({ length: 24 }, (_, i) => i + 1));
    // π: A′[x′, y′] = A[(x′ + 3y′) mod 5, x′] (FIPS 202, algorithm 3): each step's lane lands where π puts it
    for (let t = 0; t < 24; t++) {
      const [x, y] = [KECCAK_CYCLE[t] % 5, Math.floor(KECCAK_CYCLE[t] / 5)];
      assert.equal(((x + 3 * y) % 5) + 5 * x, lanes[t], `step ${t}`);
    }
    // ρ, by lane x + 5y (lane 0: 0)
    const rho = new Array<number>(25).fill(0);
    KECCAK_ROTATION.forEach((r, t) => (rho[lanes[t]] = r));
    assert.deepEqual(rho, [0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14]);
    const rc = Array.from({ length: 24 }, (_, i) => word(KECCAK_IOTA[2 * i + 1]) + word(KECCAK_IOTA[2 * i]));
    assert.deepEqual(rc, [
      "0000000000000001", "0000000000008082", "800000000000808a", "8000000080008000", "000000000000808b", "0000000080000001",
      "8000000080008081", "8000000000008009", "000000000000008a", "0000000000000088", "0000000080008009", "000000008000000a",
      "000000008000808b", "800000000000008b", "8000000000008089", "8000000000008003", "8000000000008002", "8000000000000080",
      "000000000000800a", "800000008000000a", "8000000080008081", "8000000000008080", "0000000080000001", "8000000080008008",
    ]);
  });

  it("equals Node's SHAKE-256 for inputs and outputs of every length around the 136-byte rate", () => {
    const lengths = [...around(136, 0), 1000];
    for (const n of lengths) {
      const data = bytes(n);
      for (const out of [1, 32, 135, 136, 137, 271, 272, 273, 409, 1000]) assert.equal(hex(shake256(data).read(out)), node(data, out), `in ${n}, out ${out}`);
    }
  });

  it("reads the same stream in reads of any size (across output blocks) as @noble/hashes", () => {
    for (const n of [0, 135, 136, 137, 300]) {
      const data = bytes(n);
      const stream = shake256(data);
      const parts = [0, 1, 134, 1, 136, 7, 0, 300, 2].map((size) => stream.read(size));
      const all = parts.reduce((a, b) => new Uint8Array([...a, ...b]));
      assert.equal(hex(all), node(data, all.length), `in ${n}`);
      assert.equal(hex(all), hex(nobleShake(data, { dkLen: all.length })), `in ${n}`);
    }
  });

  it("is the package's JavaScript SHAKE-256 (jsShake256, and its former name nobleShake256); Node keeps OpenSSL's by default", () => {
    assert.equal(jsShake256, shake256);
    assert.equal(nobleShake256, jsShake256);
    const data = bytes(150);
    assert.equal(toHex(defaultShake256(data).read(500)), toHex(jsShake256(data).read(500)));
  });
});
