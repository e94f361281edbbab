/*
 * createEngine({ sessionTools }): tools that only one session's runs see — in the model's
 * tool list and in the tool service — and that replace a tool of the same name there only.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ModelProvider } from '../../src/model/index.js';
import { defineTool, type AnyTool } from '../../src/tools/index.js';
import { engineFixture, recordEvents } from './fixtures.js';

const newEngine = engineFixture();

const note = defineTool({
  name: 'note_add',
  description: 'Adds a note',
  input: z.object({ text: z.string() }).strict(),
  readOnly: true,
  execute: async ({ text }) => `noted: ${text}`,
});

const ownRead = defineTool({
  name: 'file_read',
  description: 'Reads from the editor',
  input: z.object({ path: z.string() }).strict(),
  readOnly: true,
  execute: async ({ path }) => `editor copy of ${path}`,
});

/** Calls note_add and file_read on turn 0, and records the tools (name: description) each session's model saw. */
function recordingModel(seen: Map<string, string[]>): ModelProvider {
  return {
    async *complete(request) {
      const sessionId = request.context?.sessionId ?? '';
      seen.set(
        sessionId,
        request.tools.map((t) => `${t.name}: ${t.description}`),
      );
      if ((request.context?.turn ?? 0) > 0) {
        yield { type: 'message', text: 'done', toolCalls: [] };
        return;
      }
      yield {
        type: 'message',
        text: '',
        toolCalls: [
          { id: 'n', name: 'note_add', args: { text: 'x' } },
          { id: 'r', name: 'file_read', args: { path: 'a.txt' } },
        ],
      };
    },
  };
}

describe('createEngine({ sessionTools })', () => {
  it("gives a session's runs its own tools, and no other session's", async () => {
    const seen = new Map<string, string[]>();
    const perSession: Record<string, AnyTool[]> = { editor: [note, ownRead] };
    const engine = await newEngine({
      models: { scripted: recordingModel(seen) },
      sessionTools: (sessionId) => perSession[sessionId] ?? [],
    });
    const events = recordEvents(engine);

    const inEditor = await engine.submit({ sessionId: 'editor', input: 'go' });
    const elsewhere = await engine.submit({ sessionId: 'other', input: 'go' });
    await engine.wait(inEditor.runId);
    await engine.wait(elsewhere.runId);
    events.close();
    await events.ended;

    const finished = (runId: string) =>
      Object.fromEntries(
        events
          .ofRun(runId)
          .flatMap((e) => (e.type === 'tool.finished' ? [[e.callId, e.ok ? e.output : e.error?.code]] : [])),
      );
    expect(finished(inEditor.runId)).toEqual({ n: 'noted: x', r: 'editor copy of a.txt' });
    // The builtin file_read answers there: a.txt does not exist in that session's workspace.
    expect(finished(elsewhere.runId)).toEqual({ n: 'unknown_tool', r: 'not_found' });
    const toolsSeen = (sessionId: string) =>
      (seen.get(sessionId) ?? []).filter((t) => /^(note_add|file_read):/.test(t)).sort();
    expect(toolsSeen('editor')).toEqual(['file_read: Reads from the editor', 'note_add: Adds a note']);
    expect(toolsSeen('other')).toEqual([expect.stringMatching(/^file_read: Read a UTF-8 text file/)]);
  });
});
