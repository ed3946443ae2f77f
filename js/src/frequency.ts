/** The frequency oracles and RAPPOR alone (the bundle-size measure of the README): specs, encoders, reports. */
export { loadSpec, type Spec } from "./spec.js";
export { makeEncoder, newRapporClient, type Encoder, type RapporClient } from "./encoders.js";
export { reportToBinary, reportToJson, type Report } from "./report.js";
export { cryptoSource, type ByteSource } from "./random.js";
