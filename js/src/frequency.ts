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
 *
 * Its `loadSpec` reads these mechanisms' specs with their entries only (the
 * generated modules of `catalog/`): the same checks and messages as the main
 * entry's, without bundling the tables and privacy modules of the other
 * families; a spec of another registered mechanism is refused, naming the
 * main entry.
 */
import type { Catalog } from "./catalog.js";
import { binaryRr, grr } from "./catalog/grr.js";
import { hr } from "./catalog/hadamard.js";
import { blh, olh } from "./catalog/localhash.js";
import { rappor } from "./catalog/rappor.js";
import { ss } from "./catalog/subset.js";
import { oue, sue } from "./catalog/unary.js";
import type { Encoder, EncoderOptions } from "./encoder.js";
import type { JsonObject } from "./json.js";
import { GRREncoder } from "./grr.js";
import { HadamardEncoder } from "./hadamard.js";
import { LocalHashingEncoder } from "./localhash.js";
import { cryptoSource } from "./random.js";
import { RapporEncoder } from "./rappor.js";
import { type Spec, loadSpecIn } from "./specload.js";
import { SubsetEncoder } from "./subset.js";
import { UnaryEncoder } from "./unary.js";

export type { Spec } from "./specload.js";
export { newRapporClient } from "./rappor.js";
export type { Encoder, EncoderOptions, RapporClient } from "./encoder.js";
export { reportToBinary, reportToJson, type Report } from "./report.js";
export { cryptoSource, type ByteSource } from "./random.js";
export { GRREncoder, HadamardEncoder, LocalHashingEncoder, RapporEncoder, SubsetEncoder, UnaryEncoder };

/** The spec entries of the mechanisms this entry loads and encodes. */
const CATALOG: Catalog = { grr, "binary-rr": binaryRr, sue, oue, olh, blh, hr, ss, rappor };

/** The mechanisms this entry encodes. */
export const FREQUENCY_MECHANISMS: readonly string[] = Object.keys(CATALOG);

/**
 * Load a frequency-oracle or RAPPOR spec as the main entry's `loadSpec` loads
 * it (the same spec, fingerprint and refusals); a RangeError for a spec of
 * another mechanism (load it with `loadSpec` of `ldp-client`).
 */
export function loadSpec(source: string | JsonObject, expectedFingerprint?: string | null): Spec {
  return loadSpecIn(CATALOG, source, expectedFingerprint);
}

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
