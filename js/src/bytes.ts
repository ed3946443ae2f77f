/** Byte helpers: hex, UTF-8, base64, big-endian integers. */

const encoder = new TextEncoder();

export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || /[^0-9a-fA-F]/.test(hex)) throw new Error(`not hex: ${hex}`);
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/** Unsigned big-endian integer of the bytes. */
export function bytesToBigIntBE(bytes: Uint8Array): bigint {
  // 6 bytes (48 bits, exact in a Number) per BigInt step
  const head = bytes.length % 6;
  let chunk = 0;
  for (let i = 0; i < head; i++) chunk = chunk * 256 + bytes[i];
  let x = BigInt(chunk);
  for (let i = head; i < bytes.length; i += 6) {
    chunk = 0;
    for (let j = i; j < i + 6; j++) chunk = chunk * 256 + bytes[j];
    x = (x << 48n) | BigInt(chunk);
  }
  return x;
}

/** Unsigned little-endian integer of the bytes. */
export function bytesToBigIntLE(bytes: Uint8Array): bigint {
  let x = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) x = (x << 8n) | BigInt(bytes[i]);
  return x;
}

/** `x` (0 ≤ x < 2^(8·length)) as `length` big-endian bytes. */
export function bigIntToBytesBE(x: bigint, length: number): Uint8Array {
  if (x < 0n || x >> BigInt(8 * length) !== 0n) throw new RangeError(`${x} does not fit in ${length} bytes`);
  const out = new Uint8Array(length);
  for (let i = length - 1; i >= 0; i--) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Standard base64 with `=` padding. */
export function toBase64(bytes: Uint8Array): string {
  let out = "";
  const whole = bytes.length - (bytes.length % 3);
  for (let i = 0; i < whole; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += B64[n >> 18] + B64[(n >> 12) & 63] + B64[(n >> 6) & 63] + B64[n & 63];
  }
  if (whole < bytes.length) {
    const n = (bytes[whole] << 16) | ((bytes[whole + 1] ?? 0) << 8);
    out += B64[n >> 18] + B64[(n >> 12) & 63] + (bytes.length - whole === 2 ? B64[(n >> 6) & 63] : "=") + "=";
  }
  return out;
}

/** Bit length of a non-negative bigint (0 for 0). */
export function bitLength(n: bigint): number {
  return n === 0n ? 0 : n.toString(2).length;
}
