/*
 * Runs elkjs off the main thread: a layout takes hundreds of milliseconds of synchronous
 * work, which must not stall a gateway's event loop, and an internal elkjs failure (thrown
 * from a timer) must end this worker, not the process. Receives ELK graphs, answers with
 * their layouts in the same order.
 */
import { parentPort } from 'node:worker_threads';
import ELK from 'elkjs/lib/elk.bundled.js';

const elk = new ELK();

parentPort.once('message', async (graphs) => {
  try {
    const results = [];
    for (const graph of graphs) results.push(await elk.layout(graph));
    parentPort.postMessage({ results });
  } catch (error) {
    parentPort.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
});
