#!/usr/bin/env node
// Times one ONNX model in ONNX Runtime (onnxruntime-node, CPU execution provider, all graph
// optimizations, intra-op threads N, inter-op threads 1) and prints one JSON line:
//   {"median_ms", "p90_ms", "mean_ms", "min_ms", "throughput" (items/s), "runs", "threads", ...}
// Inputs come from DIR/NAME.npy for every graph input; outputs of the last run go to DIR/NAME.npy.
//
// Usage: node bench/peers/ort_bench.js MODEL.onnx --inputs DIR [--threads N] [--runs R]
//            [--warmup W] [--batch B] [--outputs DIR]
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy, writeNpy } = require('./npy');
const { createSession, percentile } = require('./ort_common');

function parseArgs(argv) {
  const args = { threads: 1, runs: 20, warmup: 3, batch: 0, inputs: '', outputs: '', model: '' };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--threads') args.threads = Number(value());
    else if (a === '--runs') args.runs = Number(value());
    else if (a === '--warmup') args.warmup = Number(value());
    else if (a === '--batch') args.batch = Number(value());
    else if (a === '--inputs') args.inputs = value();
    else if (a === '--outputs') args.outputs = value();
    else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else args.model = a;
  }
  if (!args.model || !args.inputs) throw new Error('usage: ort_bench.js MODEL.onnx --inputs DIR [--threads N] [--runs R] [--warmup W] [--batch B] [--outputs DIR]');
  if (!(args.threads >= 1 && args.runs >= 1 && args.warmup >= 0)) throw new Error('--threads and --runs must be >= 1, --warmup >= 0');
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { session, loadMs } = await createSession(args.model, args.threads);

  const feeds = {};
  let batch = args.batch;
  for (const name of session.inputNames) {
    const file = path.join(args.inputs, `${name}.npy`);
    if (!fs.existsSync(file)) throw new Error(`input '${name}': ${file} not found`);
    const t = readNpy(file);
    feeds[name] = new ort.Tensor(t.dtype, t.data, t.shape);
    if (!batch) batch = t.shape.length ? t.shape[0] : 1;
  }

  let outputs;
  for (let i = 0; i < args.warmup; ++i) outputs = await session.run(feeds);
  const times = [];
  for (let i = 0; i < args.runs; ++i) {
    const start = process.hrtime.bigint();
    outputs = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const sorted = [...times].sort((a, b) => a - b);
  const median = percentile(sorted, 50);

  if (args.outputs) {
    fs.mkdirSync(args.outputs, { recursive: true });
    for (const name of session.outputNames) {
      const t = outputs[name];
      writeNpy(path.join(args.outputs, `${name}.npy`), t.type, t.dims, t.data);
    }
  }
  const result = {
    runtime: 'onnxruntime-node',
    version: ort.env.versions.node || ort.env.versions.common,
    median_ms: median,
    p90_ms: percentile(sorted, 90),
    mean_ms: times.reduce((a, b) => a + b, 0) / times.length,
    min_ms: sorted[0],
    throughput: (batch * 1000) / median,
    batch,
    runs: args.runs,
    warmup: args.warmup,
    threads: args.threads,
    load_ms: loadMs,
  };
  process.stdout.write(JSON.stringify(result) + '\n');
  await session.release();
}

main().catch((e) => {
  process.stderr.write(`ort_bench: error: ${e.message}\n`);
  process.exit(1);
});
