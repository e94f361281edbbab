/*
 * [models.<id>] from TOML to the request on the wire: every kind, every setting, the key from
 * the environment, "id:model" in RunRequest.model, and entries that cannot work refused at start.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigToml } from '../../src/config/index.js';
import { configuredModels } from '../../src/engine/configured-models.js';
import { collect, modelRequest, replay, replayServer } from './replay-server.js';

afterEach(() => {
  delete process.env['SWITCHYARD_TEST_KEY'];
});

describe('each kind from TOML', () => {
  it('"openai": settings and headers go into the request, the key from api_key_env, the model from the run', async () => {
    const { origin, requests } = await replayServer(replay('openai-text-then-tool-call.sse'));
    process.env['SWITCHYARD_TEST_KEY'] = 'sk-local';
    const config = parseConfigToml(`
[models.local]
kind = "openai"
base_url = "${origin}/v1"
model = "qwen3:8b"
api_key_env = "SWITCHYARD_TEST_KEY"
max_tokens = 512
temperature = 0.3
tool_choice = { tool = "echo" }
parallel_tool_calls = false
headers = { "HTTP-Referer" = "https://example.test" }
max_retry_wait_seconds = 5
`);
    const local = (await configuredModels(config)).get('local')!;
    await collect(
      local,
      modelRequest({
        model: 'qwen3:32b',
        tools: [{ name: 'echo', description: 'Echoes.', parameters: { type: 'object' } }],
      }),
    );
    const [{ headers, body }] = requests as [(typeof requests)[0]];
    expect(headers['authorization']).toBe('Bearer sk-local');
    expect(headers['http-referer']).toBe('https://example.test');
    expect(body).toMatchObject({
      model: 'qwen3:32b',
      max_tokens: 512,
      temperature: 0.3,
      tool_choice: { type: 'function', function: { name: 'echo' } },
      parallel_tool_calls: false,
    });
  });

  it('"anthropic" and "google": the native APIs at base_url, keyed from the environment', async () => {
    const { origin, requests } = await replayServer(replay('anthropic-text.sse'), replay('google-text-signed.sse'));
    process.env['SWITCHYARD_TEST_KEY'] = 'native-key';
    const config = parseConfigToml(`
[models.claude]
kind = "anthropic"
base_url = "${origin}/v1"
model = "claude-sonnet-4-5"
api_key_env = "SWITCHYARD_TEST_KEY"
max_tokens = 2048

[models.gemini]
kind = "google"
base_url = "${origin}/v1beta"
model = "gemini-2.5-flash"
api_key_env = "SWITCHYARD_TEST_KEY"
`);
    const models = await configuredModels(config);
    await collect(models.get('claude')!);
    await collect(models.get('gemini')!);
    expect(requests[0]).toMatchObject({
      path: '/v1/messages',
      headers: { 'x-api-key': 'native-key' },
      body: { model: 'claude-sonnet-4-5', max_tokens: 2048 },
    });
    expect(requests[1]).toMatchObject({
      path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
      headers: { 'x-goog-api-key': 'native-key' },
    });
  });
});

describe('entries that cannot work are refused at start', () => {
  it.each([
    { toml: '[models.x]\nkind = "openai"\nmodel = "m"', says: '[models.x] kind "openai" needs base_url' },
    { toml: '[models.x]\nkind = "google"', says: '[models.x] kind "google" needs model' },
    {
      toml: '[models.x]\nkind = "anthropic"\nmodel = "m"\napi_key_env = "SWITCHYARD_TEST_UNSET"',
      says: 'needs an API key in the environment variable SWITCHYARD_TEST_UNSET',
    },
  ])('$says', async ({ toml, says }) => {
    await expect(configuredModels(parseConfigToml(toml))).rejects.toMatchObject({
      code: 'invalid_config',
      message: expect.stringContaining(says),
    });
  });

  it('without api_key_env, "anthropic" reads ANTHROPIC_API_KEY and says so when it is unset', async () => {
    const saved = process.env['ANTHROPIC_API_KEY'];
    delete process.env['ANTHROPIC_API_KEY'];
    try {
      await expect(
        configuredModels(parseConfigToml('[models.x]\nkind = "anthropic"\nmodel = "m"')),
      ).rejects.toMatchObject({ message: expect.stringContaining('ANTHROPIC_API_KEY') });
    } finally {
      if (saved !== undefined) process.env['ANTHROPIC_API_KEY'] = saved;
    }
  });

  it.each([
    { toml: '[models.x]\nkind = "bedrock"', path: 'models.x.kind' },
    { toml: '[models.x]\nkind = "openai"\ntool_choice = "always"', path: 'models.x.tool_choice' },
    { toml: '[models.x]\nkind = "openai"\nmax_retry_wait_seconds = 0', path: 'models.x.max_retry_wait_seconds' },
    { toml: '[models.x]\nkind = "openai"\ntemperature = 3', path: 'models.x.temperature' },
  ])('a bad value names its key: $path', ({ toml, path }) => {
    expect(() => parseConfigToml(toml)).toThrow(path);
  });
});
