/**
 * Client encoders of the frequency oracles and RAPPOR: one value in, one
 * report out, every coin exact and from one byte source (the CSPRNG unless
 * given), in the Python client's order.
 *
 * Each mechanism's encoder is in its own module (grr.ts, unary.ts,
 * localhash.ts, rappor.ts, hadamard.ts, sketch.ts, subset.ts, pem.ts) over
 * the shared `encoder.ts`; `makeEncoder` is in `registry.ts`, generated from
 * the Python registry and the encoders' `@mechanisms` tags, which also
 * exports every encoder class. This module gathers them.
 */
export { type Encoder, type RapporClient, RandomizedResponse, StreamResponse, cohortsOf, newClient } from "./encoder.js";
export { newRapporClient, parseBoolean } from "./rappor.js";
export * from "./registry.js"; // makeEncoder and every encoder class
