/** Bit vectors: lane i (bit i of a bigint) ↔ packed bytes, most significant bit first (numpy.packbits). */

/** Pack lanes: bit i of the vector is bit 7 − (i mod 8) of byte ⌊i/8⌋. */
export function lanesToPacked(lanes: bigint, width: number): Uint8Array {
  const out = new Uint8Array(Math.ceil(width / 8));
  for (let i = 0; i < out.length; i++) {
    const byte = Number((lanes >> BigInt(8 * i)) & 0xffn);
    out[i] = reverseByte(byte);
  }
  return out;
}

/** Packed bytes (numpy.packbits order) of the given bit positions. */
export function positionsToPacked(positions: Iterable<number>, width: number): Uint8Array {
  const out = new Uint8Array(Math.ceil(width / 8));
  for (const i of positions) out[i >> 3] |= 0x80 >> (i & 7);
  return out;
}

function reverseByte(b: number): number {
  let r = 0;
  for (let i = 0; i < 8; i++) r |= ((b >> i) & 1) << (7 - i);
  return r;
}

const REVERSED = Uint8Array.from({ length: 256 }, (_, b) => reverseByte(b));

/** Pack lanes held as 32-bit words (lane i = bit i % 32 of word ⌊i/32⌋), as `lanesToPacked`. */
export function wordsToPacked(words: Uint32Array, width: number): Uint8Array {
  const out = new Uint8Array(Math.ceil(width / 8));
  for (let i = 0; i < out.length; i++) out[i] = REVERSED[(words[i >>> 2] >>> (8 * (i & 3))) & 0xff];
  return out;
}
