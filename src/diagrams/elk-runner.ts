/*
 * Lays out ELK graphs in a worker thread (elk-worker.mjs), one worker per call, ended when
 * the layouts are back.
 */
import { Worker } from 'node:worker_threads';
import type { ElkNode } from 'elkjs/lib/elk-api.js';

type WorkerAnswer = { results: ElkNode[] } | { error: string };

export async function layoutElkGraphs(graphs: ElkNode[]): Promise<ElkNode[]> {
  const worker = new Worker(new URL('./elk-worker.mjs', import.meta.url));
  try {
    return await new Promise<ElkNode[]>((resolve, reject) => {
      worker.once('message', (answer: WorkerAnswer) =>
        'error' in answer ? reject(new Error(`statechart layout failed: ${answer.error}`)) : resolve(answer.results),
      );
      worker.once('error', (error) => reject(new Error(`statechart layout failed: ${error.message}`)));
      worker.once('exit', (code) => reject(new Error(`the statechart layout worker exited early (code ${code})`)));
      worker.postMessage(graphs);
    });
  } finally {
    await worker.terminate();
  }
}
