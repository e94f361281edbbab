/*
 * The start handshake between the server and a command it starts (docs/sandbox.md, "A command
 * dies with its server"): the command's first process writes STARTED on a socket descriptor
 * once every process between the server and the command has armed its parent-death signal,
 * and goes on only when the server answers GO. A server that died before that never answers
 * (the descriptor reads end-of-file), so its command never starts; one that answers was alive
 * after the arming, so its death from then on reaches the command.
 */
import type { Duplex } from 'node:stream';

/** What the descriptor carries once the command is about to start. */
export const STARTED = 'started';

/** The server's answer: it is still there, the command may start. */
export const GO = 'go';

/**
 * Answers STARTED with GO on `report` (a socket: it carries both ways), unless `holdBack()` says
 * the command must not start (it was stopped meanwhile). Returns what the descriptor carried.
 */
export function answerStart(report: Duplex, holdBack: () => boolean = () => false): { text(): string } {
  let text = '';
  let answered = false;
  report.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
    if (answered || !text.includes(STARTED) || holdBack()) return;
    answered = true;
    // A command gone meanwhile closed its end: nothing to answer, and not an error of ours.
    report.write(GO, () => undefined);
  });
  report.on('error', () => undefined);
  return { text: () => text };
}
