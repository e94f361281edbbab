/*
 * A prompt's content blocks as the text of a run's input. Text stays as it is; a resource link
 * (an @-mention of a file) becomes a Markdown link the model can follow with file_read; an
 * embedded text resource, which a client may send although we do not advertise it, is kept as
 * a fenced block. Images and audio are refused: we advertise neither.
 */
import { RequestError, type ContentBlock } from '@agentclientprotocol/sdk';
import { fenced } from './markdown-fence.js';

export function promptInput(blocks: readonly ContentBlock[]): string {
  return blocks.map(blockText).join('');
}

function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'resource_link':
      return `[${block.title ?? block.name}](${block.uri})`;
    case 'resource':
      if ('text' in block.resource) return `\n${block.resource.uri}:\n${fenced(block.resource.text)}\n`;
      throw RequestError.invalidParams(
        { uri: block.resource.uri },
        'binary resources are not supported; send text or a resource link',
      );
    default:
      throw RequestError.invalidParams(
        { type: block.type },
        `${block.type} content is not supported; this agent takes text and resource links`,
      );
  }
}
