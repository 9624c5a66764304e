// A bounded load on an OpenAI-compatible server (kvrt serve, llama-server): CLIENTS concurrent
// clients, each sending its share of REQUESTS streamed /v1/completions one after another, every
// prompt different from its first tokens on (no prefix to reuse). Every request asks for exactly
// MAX_TOKENS tokens ("ignore_eos": true, which both servers take); the tokens counted are those
// each final chunk's usage reports, and a request whose usage is missing or reports another count
// is a mismatch, printed and counted, so that two servers are never compared on different work.
// Prints one JSON line: aggregate generated tokens/s over the wall time, p50/p99 time to first
// token, the error and mismatch counts. EXTRA_JSON, a file holding a JSON object, adds its fields
// to every request body. Node 18 or later, no packages (global fetch).
//   node bench/serve_load.mjs URL CLIENTS REQUESTS MAX_TOKENS PROMPT_FILE [LABEL [EXTRA_JSON]]
import { readFileSync } from 'node:fs';

const [url, clientsArg, requestsArg, maxTokensArg, promptFile, label = '', extraFile] =
  process.argv.slice(2);
const extra = extraFile ? JSON.parse(readFileSync(extraFile, 'utf8')) : {};
const clients = Number(clientsArg), requests = Number(requestsArg), maxTokens = Number(maxTokensArg);
const text = readFileSync(promptFile, 'utf8').trim();

class Mismatch extends Error {}

// Time to first token (ms) and tokens generated for one streamed request.
async function one(index) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      prompt: `Request ${index}. ${text}`, max_tokens: maxTokens, temperature: 0, stream: true,
      stream_options: { include_usage: true }, ignore_eos: true, ...extra,
    }),
  });
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  let ttft = null, tokens = null, chunks = 0, buffer = '';
  const decoder = new TextDecoder();
  for await (const bytes of res.body) {
    buffer += decoder.decode(bytes, { stream: true });
    for (let end; (end = buffer.indexOf('\n\n')) >= 0; buffer = buffer.slice(end + 2)) {
      const line = buffer.slice(0, end);
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const chunk = JSON.parse(line.slice(6));
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
      if (chunk.choices?.[0]?.text) {
        chunks += 1;
        ttft ??= performance.now() - t0;
      }
    }
  }
  if (tokens !== maxTokens)
    throw new Mismatch(`usage reports ${tokens ?? 'no'} completion tokens (${chunks} text chunks), ` +
                       `not the ${maxTokens} asked for`);
  return { ttft: ttft ?? performance.now() - t0, tokens };
}

function percentile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
}

const ttfts = [];
let tokens = 0, errors = 0, mismatched = 0, next = 0;
const start = performance.now();
await Promise.all(Array.from({ length: clients }, async () => {
  for (let i; (i = next++) < requests;) {
    try {
      const r = await one(i);
      ttfts.push(r.ttft);
      tokens += r.tokens;
    } catch (e) {
      if (e instanceof Mismatch) mismatched += 1;
      else errors += 1;
      console.error(`${label} request ${i}: ${e.message}`);
    }
  }
}));
const seconds = (performance.now() - start) / 1000;
ttfts.sort((a, b) => a - b);
console.log(JSON.stringify({
  label, clients, requests, max_tokens: maxTokens, seconds: +seconds.toFixed(2), tokens,
  tokens_per_s: +(tokens / seconds).toFixed(2), ttft_p50_ms: Math.round(percentile(ttfts, 50)),
  ttft_p99_ms: Math.round(percentile(ttfts, 99)), errors, mismatched,
}));
