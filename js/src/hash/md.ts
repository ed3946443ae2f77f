/**
 * The Merkle–Damgård framing shared by SHA-256 (FIPS 180-4, section 5.1.1)
 * and MD5 (RFC 1321, section 3.1–3.2): the message, a 1 bit (0x80), zeros,
 * then its length in bits as 8 bytes, to a multiple of 64 bytes; each 64-byte
 * block is handed to the compression function as 16 32-bit words, big-endian
 * for SHA-256 and little-endian for MD5 (the length is written likewise).
 */
export function mdBlocks(data: Uint8Array, bigEndian: boolean, compress: (words: Int32Array) => void): void {
  const length = Math.ceil((data.length + 9) / 64) * 64;
  const padded = new Uint8Array(length);
  padded.set(data);
  padded[data.length] = 0x80;
  const bits = data.length * 8; // exact: below 2^53
  for (let k = 0; k < 8; k++) padded[bigEndian ? length - 1 - k : length - 8 + k] = Math.floor(bits / 2 ** (8 * k)) % 256;
  const view = new DataView(padded.buffer);
  const words = new Int32Array(16);
  for (let block = 0; block < length; block += 64) {
    for (let i = 0; i < 16; i++) words[i] = view.getInt32(block + 4 * i, !bigEndian);
    compress(words);
  }
}

/** The state words as the digest's bytes (big- or little-endian words). */
export function mdDigest(state: Int32Array, bigEndian: boolean): Uint8Array {
  const out = new Uint8Array(4 * state.length);
  const view = new DataView(out.buffer);
  state.forEach((word, i) => view.setInt32(4 * i, word, !bigEndian));
  return out;
}
