// What the onnxruntime drivers share: the session as every peer run configures it, and the latency
// percentile tessel's own figures use (bench's Latency).
'use strict';

const ort = require('onnxruntime-node');

// The CPU provider with every graph optimization and `threads` intra-op threads; with its load time.
async function createSession(model, threads) {
  const loadStart = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
  });
  return { session, loadMs: Number(process.hrtime.bigint() - loadStart) / 1e6 };
}

// Nearest rank on the sorted samples; the median of an even count averages the middle two.
function percentile(sorted, p) {
  if (p === 50 && sorted.length % 2 === 0) {
    const m = sorted.length / 2;
    return (sorted[m - 1] + sorted[m]) / 2;
  }
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

module.exports = { createSession, percentile };
