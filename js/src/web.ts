/** What a web page needs (the second bundle-size measure of the README): frequency oracles and RAPPOR, budget, Uploader, browser storage. */
export * from "./frequency.js";
export { BudgetExceededError, BudgetedEncoder, PrivacyLedger, makeBudget } from "./budget.js";
export { Uploader, UploadError, UPLOADER_DEFAULTS, type DeadLetter } from "./uploader.js";
export { fetchTaskSpec, TaskError } from "./task.js";
export { BrowserLedgerStorage, BrowserSpool, defaultStore, openBrowserClient } from "./browser.js";
