/** Python's text form of a float (`repr`, as `json.dumps` writes it). */

/**
 * The shortest round-tripping digits (as JavaScript finds them), laid out as
 * Python does: fixed notation for decimal exponents −4 ≤ e < 16 with `.0` on
 * integral values, otherwise `d.ddde±XX`.
 */
export function floatText(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  // toExponential() without an argument gives the shortest unique digits
  const [mantissa, expText] = Math.abs(x).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const exp = Number(expText);
  if (exp < -4 || exp >= 16) return `${sign}${digits[0]}${digits.length > 1 ? "." + digits.slice(1) : ""}${exponent(exp)}`;
  if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
  const fracPart = digits.slice(exp + 1) || "0";
  return `${sign}${intPart}.${fracPart}`;
}

/**
 * Python's `format(x, ".{precision}g")` (`{x:g}` is precision 6): `precision`
 * significant digits, trailing zeros dropped, fixed notation for decimal
 * exponents −4 ≤ e < precision, otherwise `d.dde±XX`.
 */
export function formatG(x: number, precision = 6): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const [mantissa, expText] = x.toExponential(precision - 1).split("e");
  const exp = Number(expText);
  const strip = (s: string) => (s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s);
  if (exp < -4 || exp >= precision) return strip(mantissa) + exponent(exp);
  return strip(x.toFixed(Math.max(precision - 1 - exp, 0)));
}

/** A decimal exponent as Python writes it: `e`, its sign, at least two digits. */
function exponent(exp: number): string {
  return `e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
}
