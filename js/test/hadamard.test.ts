/** Hadamard response: the row positions, the block layout, and the encoder's outputs (the vectors check the bytes). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HadamardEncoder, hadamardBlockSize, loadSpec, rowPosition } from "../src/index.js";

/** Entry (r, c) of the Sylvester Hadamard matrix H_b, built by doubling (independent of rowPosition). */
function sylvester(b: number): number[][] {
  let h = [[1]];
  while (h.length < b) h = [...h.map((row) => [...row, ...row]), ...h.map((row) => [...row, ...row.map((v) => -v)])];
  return h;
}

describe("hadamard", () => {
  it("rowPosition lists each row's +1 and -1 positions once", () => {
    for (const b of [2, 4, 8, 64]) {
      const h = sylvester(b);
      for (let r = 1; r < b; r++) {
        for (const plus of [true, false]) {
          const got = Array.from({ length: b / 2 }, (_, j) => rowPosition(r, j, plus)).sort((x, y) => x - y);
          const want = h[r].flatMap((v, c) => (v === (plus ? 1 : -1) ? [c] : []));
          assert.deepEqual(got, want);
        }
      }
    }
  });

  it("block size is the smallest power of two with B(b - 1) >= d", () => {
    assert.equal(hadamardBlockSize(5, 1), 8);
    assert.equal(hadamardBlockSize(40, 8), 8);
    assert.equal(hadamardBlockSize(5, 8), 2);
    assert.equal(hadamardBlockSize(1024, 4), 512);
  });

  it("refuses a spec without its calibrated fields, and encodes outputs in [0, K)", () => {
    assert.throws(() => loadSpec('{"mechanism":"hr","domain":[1,2],"epsilon":1}'), /calibrated from epsilon/);
    const spec = loadSpec('{"blocks":2,"domain":[0,1,2,3,4,5],"epsilon":1.0,"format":1,"mechanism":"hr","p":"4384485647440694613/9223372036854775808"}');
    const encoder = new HadamardEncoder(spec);
    for (let i = 0; i < 200; i++) {
      const y = Number(encoder.encode(i % 6).value);
      assert.ok(Number.isInteger(y) && y >= 0 && y < 8);
    }
  });
});
