// Latency statistics shared by the onnxruntime drivers, matching tessel's own (bench's Latency).
'use strict';

// Nearest rank on the sorted samples; the median of an even count averages the middle two.
function percentile(sorted, p) {
  if (p === 50 && sorted.length % 2 === 0) {
    const m = sorted.length / 2;
    return (sorted[m - 1] + sorted[m]) / 2;
  }
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

module.exports = { percentile };
