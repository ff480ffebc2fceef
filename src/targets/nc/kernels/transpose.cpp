// The transpose family (transpose.h). The library kernel cuts its input into square super-blocks
// whose side fills one PSUM bank per partition in the kernel dtype (bf16: 1024, f32: 512), so that
// both the loads (rows of the input) and the stores (rows of the output) move one bank's worth of
// contiguous bytes per partition. Per super-block: load its row blocks ([128, side] each), then
// emitTransposeGroup, then store each output row block as [128, side] rows of the output.
#include "targets/nc/kernels/transpose.h"

#include <algorithm>
#include <utility>

#include "targets/nc/kernels/reference.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

/// The side of one PE transpose: at most [pe.rows, pe.cols], on the partitions.
int64_t peBlock(const MachineProfile &profile) {
  return std::min({profile.partitions, profile.pe.rows, profile.pe.cols});
}

Status buildTranspose(KernelBuilder &b, const KernelParams &params) {
  const int64_t rows = params.dim("R"), cols = params.dim("C");
  const DType dtype = params.dtype;
  HbmView x = b.input("x", dtype, {rows, cols});
  HbmView out = b.output("out", dtype, {cols, rows});
  const int64_t block = peBlock(b.profile());
  const int64_t side = transposeGroupRows(b.profile(), dtype);
  for (Span rowSuper : splitRange(rows, side)) {
    for (Span colSuper : splitRange(cols, side)) {
      std::vector<TileView> inputs;
      for (Span rb : splitRange(rowSuper.count, block)) {
        TileView xt = b.sbuf("x", dtype, block, {side}).partitionSlice(0, rb.count).cols(0, colSuper.count);
        b.load(xt, x.rows(rowSuper.start + rb.start, rb.count).cols(colSuper.start, colSuper.count));
        inputs.push_back(xt);
      }
      std::vector<std::pair<Span, TileView>> outputs;
      emitTransposeGroup(b, "x", inputs, colSuper.count, [&](const Span &cb) {
        TileView ot = b.sbuf("out", dtype, block, {side}).partitionSlice(0, cb.count).cols(0, rowSuper.count);
        outputs.emplace_back(cb, ot);
        return ot;
      });
      for (const auto &[cb, ot] : outputs)
        b.store(out.rows(colSuper.start + cb.start, cb.count).cols(rowSuper.start, rowSuper.count), ot);
    }
  }
  return Status::success();
}

Expected<std::vector<HostTensor>> referenceTranspose(const KernelParams &, const std::vector<HostTensor> &inputs) {
  return runReference(irModel(inputs, "  %out = Transpose(%x) {perm = [1, 0]}"), inputs);
}

/// A transpose moves values: bit-exact.
double exactTolerance(DType) { return 0.0; }

}  // namespace

int64_t transposeGroupRows(const MachineProfile &profile, DType dtype) {
  const int64_t block = peBlock(profile);
  const int64_t bankBytes = profile.psum.bankFp32Elements * dtypeSizeBytes(DType::F32);
  return std::max(block, bankBytes / dtypeSizeBytes(dtype) / block * block);
}

void emitTransposeGroup(KernelBuilder &b, const std::string &name, std::span<const TileView> rowTiles, int64_t cols,
                        const std::function<TileView(const Span &columns)> &dstBlock) {
  if (rowTiles.empty()) return;
  const int64_t block = peBlock(b.profile());
  const DType dtype = rowTiles.front().dtype();
  int64_t rows = 0;
  for (const TileView &t : rowTiles) rows += t.partitions();
  for (const Span &cb : splitRange(cols, block)) {
    // PE transposes keep the dtype; the PSUM tile holds the group's rows, one bank at most.
    TileView pt = b.psum(name + "_t", dtype, cb.count, {rows});
    int64_t row = 0;
    for (const TileView &t : rowTiles) {
      b.transpose(pt.cols(row, t.partitions()), t.cols(cb.start, cb.count));
      row += t.partitions();
    }
    b.copy(dstBlock(cb), pt);
  }
}

std::vector<KernelDef> transposeKernels() {
  return {KernelDef{"transpose", "out = x^T: [R, C] -> [C, R] by PE transposes of 128x128 blocks", {"R", "C"},
                    {{"R", 512}, {"C", 1024}}, {DType::BF16, DType::F32}, buildTranspose, referenceTranspose,
                    exactTolerance, exactTolerance, nullptr}};
}

}  // namespace tessel::nc::kernels
