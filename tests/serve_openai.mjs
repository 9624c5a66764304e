// kvrt serve spoken to by a real client, the npm `openai` package (tests/node/, installed by
// tools/node_setup.sh): chat.completions.create whole and streamed gives kvrt chat's greedy reply,
// models.list names the model, an unknown model is the SDK's NotFoundError.
//   node tests/serve_openai.mjs KVRT_EXE SYNTH_MODEL_EXE SOURCE_DIR
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const [kvrt, synth, source] = process.argv.slice(2);
const require = createRequire(join(source, 'tests', 'node', 'package.json'));
const { default: OpenAI, NotFoundError } = await import(require.resolve('openai'));

const tmp = mkdtempSync(join(tmpdir(), 'kvrt-openai-'));
const model = join(tmp, 'chat.gguf');
let server;
try {
  const made = spawnSync(synth, ['-o', model, '--chat-from', join(source, 'models', 'stories260K.gguf')]);
  assert.equal(made.status, 0, String(made.stderr));
  const message = 'Tell me a story';
  const chat = spawnSync(kvrt, ['chat', '-m', model, '-c', '256', '-t', '1', '-n', '40'], { input: message + '\n' });
  assert.equal(chat.status, 0, String(chat.stderr));
  const expected = String(chat.stdout).replace(`> ${message}\n`, '').replace(/\n$/, '');

  server = spawn(kvrt, ['serve', '-m', model, '-c', '256', '-t', '1', '--parallel', '2', '--port', '0',
                        '--api-key', 'test-key'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    server.on('exit', (code) => reject(new Error(`kvrt serve exited with ${code}`)));
  });
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'test-key', maxRetries: 0 });
  const messages = [{ role: 'user', content: message }];

  const whole = await client.chat.completions.create({ model: 'chat', messages, max_tokens: 40 });
  assert.equal(whole.choices[0].message.content, expected);
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.match(whole.system_fingerprint, /kv k=f32.*matmul f32/);
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);

  const stream = await client.chat.completions.create({ model: 'chat', messages, max_tokens: 40, stream: true });
  let text = '';
  let last;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    last = chunk;
  }
  assert.equal(text, expected);
  assert.equal(last.choices[0].finish_reason, whole.choices[0].finish_reason);
  assert.equal(last.usage.completion_tokens, whole.usage.completion_tokens);

  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['chat']);
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o', messages }), NotFoundError);
  const wrongKey = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'nope', maxRetries: 0 });
  await assert.rejects(wrongKey.models.list(), (e) => e.status === 401);
  const sdk = JSON.parse(readFileSync(join(source, 'tests', 'node', 'node_modules', 'openai', 'package.json')));
  console.log(`openai ${sdk.version}: whole, streamed and error replies as expected`);
} finally {
  if (server) server.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
