// Upload a JSON Lines report file with the JS Uploader (tests/test_js_client.py):
//   node upload.mjs URL TASK REPORTS.jsonl SPOOL.jsonl BATCH_SIZE
// Prints one line per acknowledged batch, then the summary as JSON.
import { readFileSync } from "node:fs";
import { Uploader } from "../dist/index.js";
import { FileSpool } from "../dist/node.js";

const [url, task, reportsPath, spoolPath, batchSize] = process.argv.slice(2);
const reports = readFileSync(reportsPath, "utf8").split("\n").filter((l) => l);
const uploader = new Uploader(url, task, new FileSpool(spoolPath), {
  batchSize: Number(batchSize),
  backoffMs: 100,
  maxBackoffMs: 500,
  retries: 200,
  flushDeadlineMs: 600_000, // keep retrying through the test's collector restart
  progress: (s) => console.log(`batch ${s.batches}`),
});
await uploader.enqueue(reports);
const summary = await uploader.flush();
console.log(JSON.stringify({ ...summary, spooled: (await new FileSpool(spoolPath).load()).length }));
