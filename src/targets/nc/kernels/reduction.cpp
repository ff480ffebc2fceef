// Row reduction kernels (reduction.h). Rows on partitions; each column tile of a row tile is
// reduced by DVE into one column of a [P, chunks] partial tile (fp32 for sums, the input dtype for
// maxes, which are exact), which a last tensor_reduce folds into [P, 1]; the store casts it to the
// output dtype. Column tiles are fresh buffers, so the
// loads of the next tile overlap the reduction of the current one.
#include "targets/nc/kernels/reduction.h"

#include <fmt/format.h>

#include "targets/nc/kernels/reference.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

template <AluOp kOp>
Status buildReduce(KernelBuilder &b, const KernelParams &params) {
  const int64_t rows = params.dim("R"), cols = params.dim("C");
  const DType dtype = params.dtype;
  HbmView x = b.input("x", dtype, {rows, cols});
  HbmView out = b.output("out", dtype, {rows});
  HbmView outColumn = out.reshapeDim(0, {rows, 1});
  const int64_t partitions = rowTile(b.profile(), rows);
  const int64_t colTile = streamingColumnTile(dtype, cols);
  const std::vector<Span> colSpans = splitRange(cols, colTile);
  const int64_t numChunks = static_cast<int64_t>(colSpans.size());
  // Sums accumulate in fp32; a max is exact in the input dtype (and DVE reduces bf16 to bf16 faster).
  const DType partialType = kOp == AluOp::Maximum ? dtype : DType::F32;
  for (Span r : splitRange(rows, partitions)) {
    TileView partial = b.sbuf("partial", partialType, partitions, {numChunks}).partitionSlice(0, r.count);
    for (int64_t j = 0; j < numChunks; ++j) {
      Span c = colSpans[static_cast<size_t>(j)];
      TileView xt = b.sbuf("x", dtype, partitions, {colTile}).partitionSlice(0, r.count).cols(0, c.count);
      b.load(xt, x.rows(r.start, r.count).cols(c.start, c.count));
      b.reduce(partial.cols(j, 1), xt, kOp);
    }
    TileView result = partial;
    if (numChunks > 1) {
      result = b.sbuf("result", partialType, partitions, {1}).partitionSlice(0, r.count);
      b.reduce(result, partial, kOp);
    }
    b.store(outColumn.rows(r.start, r.count), result);
  }
  return Status::success();
}

template <AluOp kOp>
Expected<std::vector<HostTensor>> referenceReduce(const KernelParams &, const std::vector<HostTensor> &inputs) {
  // Opset 17: ReduceSum takes its axes as an input, ReduceMax as an attribute.
  if constexpr (kOp == AluOp::Add)
    return runReference(
        irModel(inputs, "  const %axes = dense<i64[1]: -1>\n  %out = ReduceSum(%x, %axes) {keepdims = 0}"), inputs);
  return runReference(irModel(inputs, "  %out = ReduceMax(%x) {axes = [-1], keepdims = 0}"), inputs);
}

/// Sums of C values: the fp32 partial sums and the reference add in different orders.
double sumAbsTolerance(DType dtype) { return dtype == DType::F32 ? 1e-3 : streamingAbsTolerance(dtype); }

}  // namespace

std::vector<KernelDef> reductionKernels() {
  return {
      KernelDef{"reduce_sum", "out[r] = sum of x[r, :] over [R, C] -> [R]", {"R", "C"}, {{"R", 256}, {"C", 1024}},
                {DType::BF16, DType::F32}, buildReduce<AluOp::Add>, referenceReduce<AluOp::Add>, sumAbsTolerance,
                streamingRelTolerance, nullptr},
      KernelDef{"reduce_max", "out[r] = max of x[r, :] over [R, C] -> [R]", {"R", "C"}, {{"R", 256}, {"C", 1024}},
                {DType::BF16, DType::F32}, buildReduce<AluOp::Maximum>, referenceReduce<AluOp::Maximum>,
                streamingAbsTolerance, streamingRelTolerance, nullptr},
  };
}

}  // namespace tessel::nc::kernels
