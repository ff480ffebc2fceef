// The transpose kernel (transpose.h). The input is cut into square super-blocks whose side fills one
// PSUM bank per partition in the kernel dtype (bf16: 1024, f32: 512), so that both the loads (rows
// of the input) and the stores (rows of the output) move one bank's worth of contiguous bytes per
// partition. Per super-block: load its row blocks ([128, side] each), PE-transpose every 128x128
// block into the PSUM tile of its output row block (PE transposes keep the dtype), copy each PSUM
// tile to SBUF (DVE or ACT, the compiler's choice) and store it as [128, side] rows of the output.
#include "targets/nc/kernels/transpose.h"

#include <algorithm>

#include "targets/nc/kernels/reference.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

Status buildTranspose(KernelBuilder &b, const KernelParams &params) {
  const int64_t rows = params.dim("R"), cols = params.dim("C");
  const DType dtype = params.dtype;
  const MachineProfile &profile = b.profile();
  HbmView x = b.input("x", dtype, {rows, cols});
  HbmView out = b.output("out", dtype, {cols, rows});
  // A PE transpose handles at most [pe.rows, pe.cols]; the blocks are square.
  const int64_t block = std::min({profile.partitions, profile.pe.rows, profile.pe.cols});
  const int64_t bankBytes = profile.psum.bankFp32Elements * dtypeSizeBytes(DType::F32);
  const int64_t side = std::max(block, bankBytes / dtypeSizeBytes(dtype) / block * block);
  for (Span rowSuper : splitRange(rows, side)) {
    for (Span colSuper : splitRange(cols, side)) {
      // Input row blocks of this super-block: [rows of the block, the super-block's columns].
      std::vector<Span> rowBlocks = splitRange(rowSuper.count, block), colBlocks = splitRange(colSuper.count, block);
      std::vector<TileView> inputs;
      for (Span rb : rowBlocks) {
        TileView xt = b.sbuf("x", dtype, block, {side}).partitionSlice(0, rb.count).cols(0, colSuper.count);
        b.load(xt, x.rows(rowSuper.start + rb.start, rb.count).cols(colSuper.start, colSuper.count));
        inputs.push_back(xt);
      }
      // Output row block cb = input column block cb; its columns are this super-block's rows.
      for (Span cb : colBlocks) {
        TileView pt = b.psum("xT", dtype, block, {side}).partitionSlice(0, cb.count).cols(0, rowSuper.count);
        for (size_t i = 0; i < rowBlocks.size(); ++i)
          b.transpose(pt.cols(rowBlocks[i].start, rowBlocks[i].count), inputs[i].cols(cb.start, cb.count));
        TileView ot = b.sbuf("out", dtype, block, {side}).partitionSlice(0, cb.count).cols(0, rowSuper.count);
        b.copy(ot, pt);
        b.store(out.rows(colSuper.start + cb.start, cb.count).cols(rowSuper.start, rowSuper.count), ot);
      }
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

std::vector<KernelDef> transposeKernels() {
  return {KernelDef{"transpose", "out = x^T: [R, C] -> [C, R] by PE transposes of 128x128 blocks", {"R", "C"},
                    {{"R", 512}, {"C", 1024}}, {DType::BF16, DType::F32}, buildTranspose, referenceTranspose,
                    exactTolerance, exactTolerance, nullptr}};
}

}  // namespace tessel::nc::kernels
