/** ldp-client: the ldp local-differential-privacy client, reproducing the Python client's reports exactly. */
export * from "./bytes.js";
export * from "./float.js";
export * from "./fraction.js";
export * from "./json.js";
export * from "./spec.js";
export * from "./values.js";
export * from "./hashing.js";
export * from "./mmh3.js";
export * from "./packing.js";
export * from "./report.js";
export * from "./random.js";
export * from "./reportbits.js";
export * from "./encoders.js";
export * from "./numeric.js";
export * from "./families.js"; // every mechanism family with an encoder (generated)
export * from "./budget.js";
export * from "./uploader.js";
export * from "./composition.js";
export * from "./claim.js";
export * from "./task.js";

import { installFastSamplers } from "./reportbits-fast.js";

// the per-report samplers' fast paths (the same bits; reportbits.ts says why ldp-client/frequency keeps the plain ones)
installFastSamplers();
