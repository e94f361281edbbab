import { describe, expect, it } from 'vitest';
import { redactText, redactValue, summarizeAction, SUMMARY_VALUE_LIMIT } from '../../src/approval/index.js';
import { applyPatchTool } from '../../src/tools/builtins/apply-patch.js';

describe('redactText: secrets in free text', () => {
  // name | input | expected output
  const rows: [string, string, string][] = [
    ['env assignment before a command', 'API_KEY=abc123 curl https://x', 'API_KEY=*** curl https://x'],
    ['export of a token', 'export GITHUB_TOKEN=ghx-123; git push', 'export GITHUB_TOKEN=***; git push'],
    ['quoted assignment', `DB_PASSWORD="hunter 2" ./migrate`, `DB_PASSWORD="***" ./migrate`],
    ['single-quoted assignment', `SECRET='s3 cr3t' make`, `SECRET='***' make`],
    [
      'several assignments',
      'AWS_SECRET_ACCESS_KEY=x AWS_REGION=eu-west-1 aws s3 ls',
      'AWS_SECRET_ACCESS_KEY=*** AWS_REGION=eu-west-1 aws s3 ls',
    ],
    ['harmless assignment is kept', 'NODE_ENV=production npm start', 'NODE_ENV=production npm start'],
    ['--flag=value', 'deploy --api-key=k123 --region=eu', 'deploy --api-key=*** --region=eu'],
    ['--flag value', 'gh auth login --token abc123 --hostname h', 'gh auth login --token *** --hostname h'],
    [
      'Authorization header',
      `curl -H "Authorization: Basic dXNlcjpwYXNz" https://x`,
      `curl -H "Authorization: ***" https://x`,
    ],
    ['Bearer token alone', 'token is Bearer eyJhbGciOi.J9.x-y_z', 'token is Bearer ***'],
    ['Cookie header', `curl -H 'Cookie: session=abc; id=2' x`, `curl -H 'Cookie: ***' x`],
    ['curl -u', 'curl -u admin:s3cret https://x', 'curl -u admin:*** https://x'],
    [
      'credentials in a URL',
      'git clone https://bob:p4ss@github.com/o/r.git',
      'git clone https://bob:***@github.com/o/r.git',
    ],
    ['OpenAI-style key', 'echo sk-proj-AbCdEfGhIjKlMnOpQrSt | tool', 'echo sk-*** | tool'],
    ['short sk- word is kept', 'pip install sk-learn', 'pip install sk-learn'],
    ['AWS access key id', 'id AKIAIOSFODNN7EXAMPLE here', 'id AKIA*** here'],
    ['GitHub token', 'push with ghp_0123456789abcdefghijABCDEFGHIJ', 'push with ghp_***'],
    ['GitHub fine-grained token', 'github_pat_11ABCDEFG0123456789_abcdefghij', 'github_pat_***'],
    ['Slack token', 'xoxb-1234567890-abcdefghij', 'xoxb-***'],
    ['JSON secret field', '{"user":"bob","password":"hunter2"}', '{"user":"bob","password":"***"}'],
    ['YAML secret field', 'client_secret: abc.def\nname: x', 'client_secret: ***\nname: x'],
    [
      'PEM private key block',
      'key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\nrest',
      'key:\n-----BEGIN RSA PRIVATE KEY----- *** -----END RSA PRIVATE KEY-----\nrest',
    ],
    [
      'unterminated PEM block',
      '-----BEGIN PRIVATE KEY-----\nMIIEvQ',
      '-----BEGIN PRIVATE KEY----- *** -----END PRIVATE KEY-----',
    ],
    ['public key is kept', '-----BEGIN PUBLIC KEY-----\nMIIB', '-----BEGIN PUBLIC KEY-----\nMIIB'],
    ['plain text is untouched', 'rm -rf build && npm test', 'rm -rf build && npm test'],
  ];
  it.each(rows)('%s', (_, input, expected) => {
    expect(redactText(input)).toBe(expected);
  });

  it('is idempotent', () => {
    for (const [, input] of rows) expect(redactText(redactText(input))).toBe(redactText(input));
  });
});

describe('redactValue: values under secret-looking keys', () => {
  const rows: [string, unknown, unknown][] = [
    ['token', { token: 'abc', path: 'a' }, { token: '***', path: 'a' }],
    [
      'apiKey / api_key / api-key',
      { apiKey: 1, api_key: 'x', 'api-key': 'y' },
      { apiKey: '***', api_key: '***', 'api-key': '***' },
    ],
    [
      'nested objects and arrays',
      { headers: [{ Authorization: 'Basic x' }], env: { DB_PASSWD: 'p', HOME: '/h' } },
      { headers: [{ Authorization: '***' }], env: { DB_PASSWD: '***', HOME: '/h' } },
    ],
    ['a whole object under a secret key', { credentials: { user: 'u', pass: 'p' } }, { credentials: '***' }],
    [
      'private_key and cookie',
      { private_key: 'k', Cookie: 'c', secretName: 's' },
      { private_key: '***', Cookie: '***', secretName: '***' },
    ],
    ['strings are scanned too', { note: 'use sk-AAAAAAAAAAAAAAAAAAAA' }, { note: 'use sk-***' }],
    ['non-objects pass through', 42, 42],
  ];
  it.each(rows)('%s', (_, input, expected) => {
    expect(redactValue(input)).toEqual(expected);
  });
});

describe('summarizeAction', () => {
  it('shows a command in full, with secrets redacted', () => {
    const command = `API_KEY=abc curl -s https://example.com/${'x'.repeat(500)} | jq .`;
    const s = summarizeAction('bash', { command, cwd: 'sub' });
    expect(s.command).toBe(command.replace('API_KEY=abc', 'API_KEY=***'));
    expect(s.summary).toBe(`bash: ${s.command}\n  cwd: "sub"`);
    expect(s.summary).not.toContain('abc');
    expect(s.destructive).toBe(false);
  });

  it('shows a file path and truncates long content with a marker', () => {
    const content = 'a'.repeat(1000);
    const s = summarizeAction('file_write', { path: 'src/main.ts', content });
    expect(s.paths).toEqual(['src/main.ts']);
    const [headline, detail] = s.summary.split('\n');
    expect(headline).toBe('file_write src/main.ts');
    expect(detail).toMatch(/^ {2}content: "a+… \[truncated, \d+ more characters\]$/);
    expect(detail!.length).toBeLessThan(SUMMARY_VALUE_LIMIT + 60);
  });

  it('redacts before it truncates, so a cut never reveals half a secret', () => {
    const s = summarizeAction('file_write', {
      path: 'a',
      content: `${'x'.repeat(SUMMARY_VALUE_LIMIT - 10)} sk-${'S'.repeat(40)}`,
    });
    expect(s.summary).not.toContain('SSSS');
  });

  it('names the operation, both paths, and says destructive', () => {
    const s = summarizeAction(
      'file_ops',
      { operation: 'move', path: 'a.txt', destination: 'b/a.txt' },
      { destructive: true },
    );
    expect(s).toEqual({
      tool: 'file_ops',
      summary: 'file_ops (destructive) move a.txt -> b/a.txt',
      paths: ['a.txt', 'b/a.txt'],
      destructive: true,
    });
  });

  it('lists the files of a patch', () => {
    const patch = [
      '*** Begin Patch',
      '*** Add File: new.txt',
      '+hi',
      '*** Delete File: old.txt',
      '*** Update File: a.ts',
      '*** Move to: b.ts',
      '@@',
      '-x',
      '+y',
      '*** End Patch',
    ].join('\n');
    const s = summarizeAction('apply_patch', { patch }, { description: applyPatchTool.describe!({ patch }) });
    expect(s.summary).toBe('apply_patch\n  add new.txt\n  delete old.txt\n  update a.ts -> b.ts');
    expect(s.paths).toEqual(['new.txt', 'old.txt', 'a.ts', 'b.ts']);
  });

  it('shows an unparseable patch as a truncated value', () => {
    expect(applyPatchTool.describe!({ patch: 'not a patch' })).toBeUndefined();
    const s = summarizeAction('apply_patch', { patch: 'not a patch' });
    expect(s.summary).toBe('apply_patch\n  patch: "not a patch"');
  });

  it('shows other arguments as sorted key: value lines, secret keys redacted', () => {
    const s = summarizeAction('mcp_github__create_issue', { title: 'Bug', token: 'ghp_x', labels: ['a', 'b'] });
    expect(s.summary).toBe('mcp_github__create_issue\n  labels: ["a","b"]\n  title: "Bug"\n  token: "***"');
  });

  it('summarizes arguments that are not an object', () => {
    expect(summarizeAction('t', 'Bearer abc').summary).toBe('t "Bearer ***"');
  });
});
