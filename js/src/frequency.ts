/**
 * `ldp-client/frequency`: the frequency oracles and RAPPOR alone (GRR,
 * binary RR, SUE, OUE, OLH, BLH, HR, SS, RAPPOR), for a web page that
 * needs nothing else: specs, encoders, reports, the CSPRNG source.
 *
 * Its `makeEncoder` names only these mechanisms' encoders, so a bundler
 * leaves the other families out (the main entry's `makeEncoder` names every
 * mechanism, hence bundles every encoder); any other spec is refused, naming
 * the main entry. The reports are the main entry's, byte for byte (the same
 * classes). This is also the bundle-size measure of the README (`npm run size`).
 */
import type { Encoder, EncoderOptions } from "./encoder.js";
import { GRREncoder } from "./grr.js";
import { HadamardEncoder } from "./hadamard.js";
import { LocalHashingEncoder } from "./localhash.js";
import { cryptoSource } from "./random.js";
import { RapporEncoder } from "./rappor.js";
import type { Spec } from "./spec.js";
import { SubsetEncoder } from "./subset.js";
import { UnaryEncoder } from "./unary.js";

export { loadSpec, type Spec } from "./spec.js";
export { newRapporClient } from "./rappor.js";
export type { Encoder, EncoderOptions, RapporClient } from "./encoder.js";
export { reportToBinary, reportToJson, type Report } from "./report.js";
export { cryptoSource, type ByteSource } from "./random.js";
export { GRREncoder, HadamardEncoder, LocalHashingEncoder, RapporEncoder, SubsetEncoder, UnaryEncoder };

/** The mechanisms this entry encodes. */
export const FREQUENCY_MECHANISMS: readonly string[] = ["grr", "binary-rr", "sue", "oue", "olh", "blh", "hr", "ss", "rappor"];

/**
 * The encoder of a frequency-oracle or RAPPOR spec, as the main entry's
 * `makeEncoder` makes it (same options); a RangeError for any other
 * mechanism (use `makeEncoder` of `ldp-client`).
 */
export function makeEncoder(spec: Spec, options: EncoderOptions = {}): Encoder {
  const source = options.source ?? cryptoSource;
  switch (spec.mechanism) {
    case "grr":
    case "binary-rr":
      return new GRREncoder(spec, source);
    case "sue":
    case "oue":
      return new UnaryEncoder(spec, source);
    case "olh":
    case "blh":
      return new LocalHashingEncoder(spec, source);
    case "hr":
      return new HadamardEncoder(spec, source);
    case "ss":
      return new SubsetEncoder(spec, source);
    case "rappor":
      return RapporEncoder.create(spec, source, options);
  }
  throw new RangeError(
    `ldp-client/frequency encodes ${FREQUENCY_MECHANISMS.join(", ")}, not ${String(spec.mechanism)}: use makeEncoder of ldp-client`,
  );
}
