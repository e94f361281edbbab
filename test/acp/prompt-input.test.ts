/* A prompt's content blocks as a run's input text. */
import { describe, expect, it } from 'vitest';
import { RequestError, type ContentBlock } from '@agentclientprotocol/sdk';
import { promptInput } from '../../src/acp/prompt-input.js';

describe('promptInput', () => {
  it('keeps text and turns resource links into Markdown links, in order', () => {
    const blocks: ContentBlock[] = [
      { type: 'text', text: 'Fix ' },
      { type: 'resource_link', name: 'parser.ts', uri: 'file:///w/src/parser.ts' },
      { type: 'text', text: ' please' },
    ];
    expect(promptInput(blocks)).toBe('Fix [parser.ts](file:///w/src/parser.ts) please');
  });

  it('keeps an embedded text resource as a fenced block', () => {
    const input = promptInput([{ type: 'resource', resource: { uri: 'file:///w/a.md', text: 'has ``` inside' } }]);
    expect(input).toBe('\nfile:///w/a.md:\n````\nhas ``` inside\n````\n');
  });

  it('refuses images (not advertised) with an invalid-params error', () => {
    expect(() => promptInput([{ type: 'image', data: 'AAAA', mimeType: 'image/png' }])).toThrow(RequestError);
  });
});
