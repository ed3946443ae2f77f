/** What a web page needs (the second bundle-size measure of the README): every encoder (`makeEncoder` of every mechanism: a page may use a memoized one), budget, Uploader, browser storage. */
export { loadSpec, type Spec } from "./spec.js";
export { makeEncoder, newRapporClient, type Encoder, type RapporClient } from "./encoders.js"; // every mechanism (memoized ones too)
export { reportToBinary, reportToJson, type Report } from "./report.js";
export { cryptoSource, type ByteSource } from "./random.js";
export { BudgetExceededError, BudgetedEncoder, PrivacyLedger, makeBudget } from "./budget.js";
export { Uploader, UploadError, UPLOADER_DEFAULTS, type DeadLetter } from "./uploader.js";
export { fetchTaskSpec, TaskError } from "./task.js";
export { BrowserLedgerStorage, BrowserSpool, defaultStore, openBrowserClient } from "./browser.js";
