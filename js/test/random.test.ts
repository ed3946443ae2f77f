/** The pooled CSPRNG source and Node's native SHAKE-256 (the fast paths of bench/encode.mjs). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FixedSource, PooledSource, defaultShake256, fraction, nobleShake256, runtimeHashShake256, sampleLaneWords, toHex } from "../src/index.js";
import { nativeShake256 } from "../src/node.js";

/** A PooledSource over a counter "generator": byte j of the generator's output is j mod 251 (so every byte can be traced). */
function traced(blockSize: number) {
  let next = 0;
  const fills: number[] = [];
  const source = new PooledSource(blockSize, (out) => {
    fills.push(out.length);
    for (let i = 0; i < out.length; i++) out[i] = next++ % 251;
  });
  return { source, fills, generated: () => next };
}

describe("PooledSource", () => {
  it("serves the generator's bytes in order, each at most once, one fill per block", () => {
    const { source, fills } = traced(64);
    const seen: number[] = [];
    for (const n of [1, 7, 16, 40]) seen.push(...source.read(n)); // 64 bytes: one block
    assert.deepEqual(seen, Array.from({ length: 64 }, (_, j) => j));
    assert.deepEqual(fills, [64]);
  });
  it("drops (never serves) the rest of a block too short for a read", () => {
    const { source, fills } = traced(64);
    source.read(60);
    const next = source.read(8); // 4 bytes left: dropped, a new block is drawn
    assert.deepEqual([...next], [64, 65, 66, 67, 68, 69, 70, 71]);
    assert.deepEqual(fills, [64, 64]);
  });
  it("reads longer than a block bypass the pool, which keeps its place", () => {
    const { source, fills } = traced(16);
    assert.deepEqual([...source.read(2)], [0, 1]);
    assert.equal(source.read(40).length, 40);
    assert.deepEqual(fills, [16, 40]);
    assert.deepEqual([...source.read(2)], [2, 3]);
  });
  it("returns copies, and zeroes what it served in the pool", () => {
    const { source } = traced(16);
    const a = source.read(4);
    const b = source.read(4);
    a.fill(99);
    assert.deepEqual([...b], [4, 5, 6, 7]);
    const pool = (source as unknown as { pool: Uint8Array }).pool;
    assert.deepEqual([...pool.subarray(0, 8)], [0, 0, 0, 0, 0, 0, 0, 0]);
    assert.deepEqual([...pool.subarray(8, 10)], [8, 9]);
  });
  it("the default source draws from crypto.getRandomValues (distinct 32-byte reads)", () => {
    const source = new PooledSource();
    const reads = new Set(Array.from({ length: 2000 }, () => toHex(source.read(32))));
    assert.equal(reads.size, 2000);
  });
  it("refuses a bad block size", () => {
    assert.throws(() => new PooledSource(0), /blockSize/);
  });
});

describe("nativeShake256", () => {
  it("reads the same stream as nobleShake256, whatever the read sizes (rate 136 around the edges)", () => {
    for (const len of [0, 1, 135, 136, 137, 300]) {
      const input = Uint8Array.from({ length: len }, (_, i) => (i * 37) & 0xff);
      const a = nativeShake256(input);
      const b = nobleShake256(input);
      for (const n of [1, 135, 192, 0, 7, 500, 3]) assert.equal(toHex(a.read(n)), toHex(b.read(n)), `input ${len}, read ${n}`);
    }
  });
});

describe("defaultShake256", () => {
  it("is Node's OpenSSL SHAKE-256 in Node (found without importing node:crypto), with noble's bytes", () => {
    assert.notEqual(runtimeHashShake256(), null);
    const input = Uint8Array.from({ length: 200 }, (_, i) => (i * 11) & 0xff);
    const a = defaultShake256(input);
    const b = nobleShake256(input);
    for (const n of [1, 135, 192, 0, 7, 500, 3]) assert.equal(toHex(a.read(n)), toHex(b.read(n)), `read ${n}`);
  });
});

describe("sampleLaneWords (keyed PRF streams) far into the digits", () => {
  it("a lane undecided for 201 rounds is decided by the next digit of 1/3", () => {
    // 1/3 = 0.010101…₂: round r's digit is r mod 2. Planes equal to the digits for rounds 0..200, then all
    // `fill`: 0 decides at round 201 (digit 1, U's 0: U < 1/3, the coin is 1); 1 at round 202 (digit 0, U's 1: 0).
    for (const [fill, coin] of [
      [0, 1],
      [1, 0],
    ]) {
      const planes = Array.from({ length: 12 * 17 }, (_, r) => (r < 201 ? r % 2 : fill));
      const source = new FixedSource(Uint8Array.from(planes));
      const lanes = sampleLaneWords(1, [{ mask: Uint32Array.of(1), probability: fraction(1n, 3n) }], source);
      assert.equal(lanes[0], coin);
      assert.equal(source.remaining, 0); // 17 blocks of 12 one-byte planes read
    }
  });
});
