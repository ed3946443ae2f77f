/**
 * SHAKE-256 (FIPS 202), the extendable-output function of every keyed
 * stream: Keccak-f[1600] on 25 lanes of 64 bits, each held as two 32-bit
 * halves (state word 2i is lane i's low half, 2i + 1 its high half, so word k
 * holds state bytes 4k … 4k + 3, little-endian as FIPS 202 orders them),
 * rate 136 bytes, suffix bits 1111 then pad10*1 (bytes 0x1F … 0x80).
 *
 * Written from FIPS 202, section 3.2: the rotation offsets (ρ), the lane
 * positions (π) and the round constants (ι, from the LFSR rc) are computed
 * here from their definitions, not copied; `test/hash.test.ts` checks them
 * against the Keccak team's tables and the output against Node's OpenSSL and
 * the NIST examples.
 */

/** The rate of SHAKE-256 in bytes: 1600 − 2·256 bits. */
export const SHAKE256_RATE = 136;

/**
 * ρ and π along π's cycle through lanes 1 … 24 (lane 0 stays, unrotated): from lane 1 ((x, y) = (1, 0)),
 * the t-th lane of the cycle is rotated left by KECCAK_ROTATION[t] = (t + 1)(t + 2)/2 mod 64 (ρ) and moved
 * to lane KECCAK_CYCLE[t] = x′ + 5y′, (x′, y′) = (y, 2x + 3y mod 5) (π: A′[x′, y′] = A[x′ + 3y′ mod 5, x′]),
 * the next lane of the cycle.
 */
export const KECCAK_ROTATION: number[] = [];
export const KECCAK_CYCLE: number[] = [];
/** ι's 24 round constants as (low, high) halves: round i's at 2i, 2i + 1. */
export const KECCAK_IOTA = new Int32Array(48);

// round t's constant has bit 2^j − 1 = rc(7t + j), j = 0 … 6, where rc is the LFSR x^8 + x^6 + x^5 + x^4 + 1
// from r = 1, one output bit (r's bit 0) per step (FIPS 202, algorithms 5 and 6)
for (let t = 0, x = 1, y = 0, r = 1; t < 24; t++) {
  KECCAK_ROTATION.push((((t + 1) * (t + 2)) / 2) % 64);
  [x, y] = [y, (2 * x + 3 * y) % 5];
  KECCAK_CYCLE.push(x + 5 * y);
  for (let j = 0; j < 7; j++) {
    const bit = (1 << j) - 1;
    if (r & 1) KECCAK_IOTA[2 * t + (bit >> 5)] ^= 1 << (bit & 31);
    r = (r << 1) ^ (r & 0x80 ? 0x171 : 0);
  }
}

/** θ's column parities, twice over (C[x + 10] = C[x]: the columns x ± 1 without a modulo). */
const C = new Int32Array(20);

/** Keccak-f[1600] on the 50 words of `s`, in place: 24 rounds of θ, ρ and π, χ, ι (FIPS 202, algorithm 7). */
export function keccakF1600(s: Int32Array): void {
  for (let round = 0; round < 48; round += 2) {
    // θ: each lane ^= parity of the column to its left ^ (parity of the column to its right, rotated by 1)
    for (let x = 0; x < 10; x++) C[x] = C[x + 10] = s[x] ^ s[x + 10] ^ s[x + 20] ^ s[x + 30] ^ s[x + 40];
    for (let x = 0; x < 10; x += 2) {
      const l = C[x + 2];
      const h = C[x + 3];
      const dl = C[x + 8] ^ ((l << 1) | (h >>> 31));
      const dh = C[x + 9] ^ ((h << 1) | (l >>> 31));
      for (let y = x; y < 50; y += 10) {
        s[y] ^= dl;
        s[y + 1] ^= dh;
      }
    }
    // ρ and π, in place along π's cycle: step t's lane, rotated, replaces lane KECCAK_CYCLE[t], which moves on
    // next (no rotation is 0 or 32, (t + 1)(t + 2)/2 mod 64 for t < 24: the shifts below stay within 1 … 31)
    let l = s[2];
    let h = s[3];
    for (let t = 0; t < 24; t++) {
      const r = KECCAK_ROTATION[t];
      const q = 2 * KECCAK_CYCLE[t];
      const lo = l;
      const hi = h;
      l = s[q];
      h = s[q + 1];
      if (r < 32) {
        s[q] = (lo << r) | (hi >>> (32 - r));
        s[q + 1] = (hi << r) | (lo >>> (32 - r));
      } else {
        s[q] = (hi << (r - 32)) | (lo >>> (64 - r));
        s[q + 1] = (lo << (r - 32)) | (hi >>> (64 - r));
      }
    }
    // χ, row by row: A[x, y] ^= ¬A[x + 1, y] ∧ A[x + 2, y] (x + 1 and x + 2 wrap round to the row's first lanes)
    for (let y = 0; y < 50; y += 10) {
      const l0 = s[y];
      const h0 = s[y + 1];
      const l1 = s[y + 2];
      const h1 = s[y + 3];
      s[y] ^= ~s[y + 2] & s[y + 4];
      s[y + 1] ^= ~s[y + 3] & s[y + 5];
      s[y + 2] ^= ~s[y + 4] & s[y + 6];
      s[y + 3] ^= ~s[y + 5] & s[y + 7];
      s[y + 4] ^= ~s[y + 6] & s[y + 8];
      s[y + 5] ^= ~s[y + 7] & s[y + 9];
      s[y + 6] ^= ~s[y + 8] & l0;
      s[y + 7] ^= ~s[y + 9] & h0;
      s[y + 8] ^= ~l0 & l1;
      s[y + 9] ^= ~h0 & h1;
    }
    // ι
    s[0] ^= KECCAK_IOTA[round];
    s[1] ^= KECCAK_IOTA[round + 1];
  }
}

/**
 * The SHAKE-256 output of `input`, read in order: `read(n)` returns its next
 * n bytes (any sizes; the output of length L is a prefix of every longer one).
 */
export function shake256(input: Uint8Array): { read(n: number): Uint8Array } {
  const s = new Int32Array(50);
  let pos = 0; // the next byte of the rate to absorb or squeeze
  for (let i = 0; i < input.length; i++) {
    s[pos >> 2] ^= input[i] << ((pos & 3) << 3);
    if (++pos === SHAKE256_RATE) {
      keccakF1600(s);
      pos = 0;
    }
  }
  s[pos >> 2] ^= 0x1f << ((pos & 3) << 3);
  s[(SHAKE256_RATE - 1) >> 2] ^= 0x80 << 24;
  keccakF1600(s);
  pos = 0;
  return {
    read(n: number): Uint8Array {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) {
        if (pos === SHAKE256_RATE) {
          keccakF1600(s);
          pos = 0;
        }
        out[i] = s[pos >> 2] >>> ((pos & 3) << 3);
        pos++;
      }
      return out;
    },
  };
}
