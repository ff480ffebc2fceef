#!/usr/bin/env node
// Greedy generation with a decoder exported with its KV cache (bench/make_llm.py) in ONNX Runtime
// (onnxruntime-node, CPU execution provider, all graph optimizations, intra-op threads N, inter-op
// threads 1), the loop written as ONNX Runtime users write it: a prefill with an empty past (past
// dim 0), then one token per run with `present.*` fed back as `past_key_values.*` at their exact
// length, attention_mask ones [batch, total] and position_ids the new positions. Prints one JSON line:
//   {"ids", "ttft_ms", "step_ms" (each decode run), "p50_ms", "p90_ms", "tokens_per_s", ...}
// As `tessel generate` does, a step's time is the session run alone (not the argmax or building the
// feeds), the first token's time is the prefill run (the session's first), and tokens/s is the decode
// runs over their summed time.
//
// Usage: node bench/peers/ort_generate.js MODEL.onnx --prompt IDS.npy [--max-new-tokens T] [--threads N]
'use strict';

const ort = require('onnxruntime-node');
const { readNpy } = require('./npy');
const { createSession, percentile } = require('./ort_common');

function parseArgs(argv) {
  const args = { model: '', prompt: '', newTokens: 64, threads: 1 };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--prompt') args.prompt = value();
    else if (a === '--max-new-tokens') args.newTokens = Number(value());
    else if (a === '--threads') args.threads = Number(value());
    else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else args.model = a;
  }
  if (!args.model || !args.prompt) throw new Error('usage: ort_generate.js MODEL.onnx --prompt IDS.npy [--max-new-tokens T] [--threads N]');
  if (!(args.threads >= 1 && args.newTokens >= 1)) throw new Error('--threads and --max-new-tokens must be >= 1');
  return args;
}

function int64Tensor(rows, columns, at) {
  const data = new BigInt64Array(rows * columns);
  for (let b = 0; b < rows; ++b) for (let i = 0; i < columns; ++i) data[b * columns + i] = BigInt(at(b, i));
  return new ort.Tensor('int64', data, [rows, columns]);
}

// The argmax of each row's last position.
function nextTokens(logits) {
  const [batch, length, vocabulary] = logits.dims;
  const next = [];
  for (let b = 0; b < batch; ++b) {
    const base = (b * length + length - 1) * vocabulary;
    let best = 0;
    for (let v = 1; v < vocabulary; ++v) if (logits.data[base + v] > logits.data[base + best]) best = v;
    next.push(best);
  }
  return next;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { session, loadMs } = await createSession(args.model, args.threads);

  const pastNames = session.inputNames.filter((n) => n.startsWith('past_key_values.'));
  // Past shapes [batch, kv_heads, past, head_dim]: kv_heads and head_dim from the model's input metadata.
  const pastDims = {};
  for (const meta of session.inputMetadata || []) {
    if (meta.name && meta.name.startsWith('past_key_values.')) pastDims[meta.name] = meta.shape;
  }
  const prompt = readNpy(args.prompt);
  if (prompt.dtype !== 'int64' || prompt.shape.length !== 2) throw new Error(`${args.prompt}: expected int64 [batch, length]`);
  const batch = prompt.shape[0];
  let past = {};
  for (const name of pastNames) {
    const shape = pastDims[name];
    if (!shape || typeof shape[1] !== 'number' || typeof shape[3] !== 'number') throw new Error(`input '${name}': kv_heads and head_dim must be fixed`);
    past[name] = new ort.Tensor('float32', new Float32Array(0), [batch, shape[1], 0, shape[3]]);
  }

  let ids = new ort.Tensor('int64', prompt.data, prompt.shape);
  let cached = 0;
  const out = Array.from({ length: batch }, () => []);
  const stepMs = [];
  const loopStart = process.hrtime.bigint();
  for (let step = 0; step < args.newTokens; ++step) {
    const added = ids.dims[1];
    const feeds = {
      input_ids: ids,
      attention_mask: int64Tensor(batch, cached + added, () => 1),
      position_ids: int64Tensor(batch, added, (b, i) => cached + i),
      ...past,
    };
    const start = process.hrtime.bigint();
    const outputs = await session.run(feeds);
    stepMs.push(Number(process.hrtime.bigint() - start) / 1e6);
    const next = nextTokens(outputs.logits);
    next.forEach((id, b) => out[b].push(id));
    cached += added;
    past = {};
    for (const name of pastNames) past[name] = outputs[`present.${name.slice('past_key_values.'.length)}`];
    ids = int64Tensor(batch, 1, (b) => next[b]);
  }
  const loopMs = Number(process.hrtime.bigint() - loopStart) / 1e6;

  const decode = stepMs.slice(1);
  const sorted = [...decode].sort((a, b) => a - b);
  const decodeMs = decode.reduce((a, b) => a + b, 0);
  const result = {
    runtime: 'onnxruntime-node',
    version: ort.env.versions.node || ort.env.versions.common,
    ids: out,
    ttft_ms: stepMs[0],
    step_ms: decode,
    p50_ms: sorted.length ? percentile(sorted, 50) : null,
    p90_ms: sorted.length ? percentile(sorted, 90) : null,
    tokens_per_s: decode.length ? (1000 * decode.length * batch) / decodeMs : null,
    loop_ms: loopMs,
    load_ms: loadMs,
    batch,
    threads: args.threads,
  };
  process.stdout.write(JSON.stringify(result) + '\n');
  await session.release();
}

main().catch((e) => {
  process.stderr.write(`ort_generate: error: ${e.message}\n`);
  process.exit(1);
});
