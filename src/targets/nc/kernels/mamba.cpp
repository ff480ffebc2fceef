// The fused Mamba kernels (mamba.h). Per (channel tile, state), as in the tutorial:
//   deltaA  = exp(delta * A[:, s])                 ACT, A's column as the per-partition scale
//   deltaU  = delta * u                            DVE
//   deltaBu = deltaU * B[s] (broadcast to P)       DVE
//   scan    = scan(deltaA, deltaBu): h = a*h + b   DVE tensor_tensor_scan
//   acc    += scan * C[s] (broadcast to P)         DVE (v3: the product lands in PSUM, so the
//                                                  accumulation reads one SBUF and one PSUM input)
// B[s] and C[s] are [1, L] rows loaded into every partition by a broadcast DMA (the tutorial's
// broadcast_to of a one-partition tile).
//
// deltaU does not depend on the state. In v1 it is recomputed per (state, channel tile), since
// delta and u are reloaded there. In v2 and v3, where delta and u stay loaded across the state loop,
// it is computed once per channel tile: the tutorial's code writes it inside the state loop, but
// its published profiles show DVE busy ~6.9 N cycles per state step for v2 and ~7.4 N for v3 (N =
// sequence elements), against ~9.2 N for v1, which is the work without the recomputation; tessel's
// DSL records operations as written, so the variants state the hoisted form.
#include "targets/nc/kernels/mamba.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "targets/nc/kernels/kernel_options.h"
#include "targets/nc/kernels/reference.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

/// The tutorial's sequence tile for v3 ("decided through empirical profiling").
constexpr int64_t kSeqTile = 512;

struct Mamba {
  KernelBuilder &b;
  int64_t batch, channels, seqLen, states, partitions;
  HbmView delta, u, a, bIn, cIn, out;

  int64_t channelTiles() const { return channels / partitions; }

  /// Channels [c0, c0 + P) of batch `n` of delta, u or out ([B, C, L]): [1, P, L].
  HbmView channelRows(const HbmView &t, int64_t n, int64_t c0) const {
    return t.slice(0, n, 1).slice(1, c0, partitions);
  }
  TileView loadRows(const HbmView &src, int64_t n, int64_t c0, const char *name) {
    TileView t = b.sbuf(name, DType::F32, partitions, {seqLen});
    b.load(t, channelRows(src, n, c0));
    return t;
  }
  /// Row s of b or c for batch `n`, columns [l0, l0 + count), in every partition.
  TileView loadBroadcastRow(const HbmView &src, int64_t n, int64_t s, int64_t l0, int64_t count, const char *name) {
    TileView t = b.sbuf(name, DType::F32, partitions, {count});
    b.load(t, src.slice(0, n, 1).slice(1, s, 1).slice(2, l0, count).broadcast(1, partitions));
    return t;
  }
  TileView loadA(int64_t c0, int64_t s) {
    TileView t = b.sbuf("a", DType::F32, partitions, {1});
    b.load(t, a.rows(c0, partitions).cols(s, 1));
    return t;
  }
  /// deltaA, deltaBu, the scan and its product with C[s], for one (channel tile, state, sequence
  /// span); returns the product (in PSUM when `productInPsum`), scanning from `initial`.
  TileView stateStep(const TileView &deltaTile, const TileView &deltaU, const TileView &aCol, int64_t n, int64_t s,
                     Span seq, tile::ScalarOperand initial, bool productInPsum, TileView *scanOut = nullptr) {
    const int64_t len = seq.count;
    TileView deltaA = b.sbuf("delta_a", DType::F32, partitions, {len});
    b.activation(deltaA, deltaTile, ActFunc::Exp, activationArgs(aCol));
    TileView bRow = loadBroadcastRow(bIn, n, s, seq.start, len, "b_row");
    TileView deltaBu = b.sbuf("delta_bu", DType::F32, partitions, {len});
    b.tensorTensor(deltaBu, deltaU, bRow, AluOp::Multiply, Engine::DVE);
    TileView scan = b.sbuf("scan", DType::F32, partitions, {len});
    b.tensorTensorScan(scan, deltaA, deltaBu, AluOp::Multiply, AluOp::Add, initial);
    if (scanOut) *scanOut = scan;
    TileView cRow = loadBroadcastRow(cIn, n, s, seq.start, len, "c_row");
    TileView product = productInPsum ? b.psum("scan_c", DType::F32, partitions, {len})
                                     : b.sbuf("scan_c", DType::F32, partitions, {len});
    b.tensorTensor(product, scan, cRow, AluOp::Multiply, Engine::DVE);
    return product;
  }

  void v1() {
    for (int64_t n = 0; n < batch; ++n) {
      std::vector<TileView> accum;
      for (int64_t ct = 0; ct < channelTiles(); ++ct) {
        accum.push_back(b.sbuf("acc", DType::F32, partitions, {seqLen}));
        b.memset(accum.back(), 0.0f, Engine::DVE);
      }
      for (int64_t s = 0; s < states; ++s)
        for (int64_t ct = 0; ct < channelTiles(); ++ct) {
          const int64_t c0 = ct * partitions;
          TileView deltaTile = loadRows(delta, n, c0, "delta");
          TileView aCol = loadA(c0, s);
          TileView uTile = loadRows(u, n, c0, "u");
          TileView deltaU = b.sbuf("delta_u", DType::F32, partitions, {seqLen});
          b.tensorTensor(deltaU, deltaTile, uTile, AluOp::Multiply, Engine::DVE);
          TileView product = stateStep(deltaTile, deltaU, aCol, n, s, {0, seqLen}, 0.0f, /*productInPsum=*/false);
          TileView acc = accum[static_cast<size_t>(ct)];
          b.tensorTensor(acc, acc, product, AluOp::Add, Engine::DVE);
        }
      for (int64_t ct = 0; ct < channelTiles(); ++ct)
        b.store(channelRows(out, n, ct * partitions), accum[static_cast<size_t>(ct)]);
    }
  }

  /// v2 (one sequence tile covering L, no carry) and v3 (tiles of `seqTile`, scan carried, products
  /// in PSUM).
  void v2v3(bool v3, int64_t seqTile) {
    const std::vector<Span> seqTiles = splitRange(seqLen, v3 ? seqTile : seqLen);
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t ct = 0; ct < channelTiles(); ++ct) {
        const int64_t c0 = ct * partitions;
        TileView acc = b.sbuf("acc", DType::F32, partitions, {seqLen});
        b.memset(acc, 0.0f, Engine::DVE);
        TileView deltaTile = loadRows(delta, n, c0, "delta");
        TileView uTile = loadRows(u, n, c0, "u");
        TileView deltaU = b.sbuf("delta_u", DType::F32, partitions, {seqLen});
        b.tensorTensor(deltaU, deltaTile, uTile, AluOp::Multiply, Engine::DVE);
        for (int64_t s = 0; s < states; ++s) {
          TileView aCol = loadA(c0, s);
          TileView carry = b.sbuf("scan_init", DType::F32, partitions, {1});
          for (size_t t = 0; t < seqTiles.size(); ++t) {
            const Span seq = seqTiles[t];
            TileView scan;
            tile::ScalarOperand initial = 0.0f;
            if (t > 0) initial = carry;
            TileView product = stateStep(deltaTile.cols(seq.start, seq.count), deltaU.cols(seq.start, seq.count), aCol,
                                         n, s, seq, initial, /*productInPsum=*/v3, &scan);
            if (t + 1 < seqTiles.size()) b.copy(carry, scan.cols(seq.count - 1, 1), Engine::DVE);
            TileView accSpan = acc.cols(seq.start, seq.count);
            b.tensorTensor(accSpan, accSpan, product, AluOp::Add, Engine::DVE);
          }
        }
        b.store(channelRows(out, n, c0), acc);
      }
    }
  }
};

Status buildMamba(KernelBuilder &b, const KernelParams &params) {
  const int64_t partitions = b.profile().partitions;
  Mamba m{b, params.dim("B"), params.dim("C"), params.dim("L"), params.dim("S"), partitions, {}, {}, {}, {}, {}, {}};
  if (m.channels % partitions != 0)
    return makeError(ErrorCode::InvalidArgument, "kernel 'mamba': C={} is not a multiple of the {} partitions",
                     m.channels, partitions);
  TESSEL_ASSIGN_OR_RETURN(int64_t seqTile, positiveIntOption(params, "seq_tile", kSeqTile));
  seqTile = std::min(seqTile, m.seqLen);
  if (params.variant == "v3" && m.seqLen % seqTile != 0)
    return makeError(ErrorCode::InvalidArgument, "kernel 'mamba' variant v3: L={} is not a multiple of seq_tile={}",
                     m.seqLen, seqTile);
  m.delta = b.input("delta", DType::F32, {m.batch, m.channels, m.seqLen});
  m.u = b.input("u", DType::F32, {m.batch, m.channels, m.seqLen});
  m.a = b.input("a", DType::F32, {m.channels, m.states});
  m.bIn = b.input("b", DType::F32, {m.batch, m.states, m.seqLen});
  m.cIn = b.input("c", DType::F32, {m.batch, m.states, m.seqLen});
  m.out = b.output("out", DType::F32, {m.batch, m.channels, m.seqLen});
  if (params.variant == "v2") m.v2v3(/*v3=*/false, seqTile);
  else if (params.variant == "v3") m.v2v3(/*v3=*/true, seqTile);
  else m.v1();
  return Status::success();
}

// The recurrence unrolled along L: h_l = dA[..., l] * h_{l-1} + dBu[..., l] over [B, C, S, 1] slices.
Expected<std::vector<HostTensor>> referenceMamba(const KernelParams &params, const std::vector<HostTensor> &inputs) {
  const int64_t seqLen = params.dim("L");
  std::string body = R"(  const %ax2 = dense<i64[1]: 2>
  const %ax1 = dense<i64[1]: 1>
  const %ax03 = dense<i64[2]: 0, 3>
  const %ax3 = dense<i64[1]: 3>
  %delta4 = Unsqueeze(%delta, %ax2)
  %a4 = Unsqueeze(%a, %ax03)
  %delta_a_arg = Mul(%delta4, %a4)
  %delta_a = Exp(%delta_a_arg)
  %delta_u = Mul(%delta, %u)
  %delta_u4 = Unsqueeze(%delta_u, %ax2)
  %b4 = Unsqueeze(%b, %ax1)
  %delta_bu = Mul(%delta_u4, %b4)
)";
  std::vector<std::string> states;
  for (int64_t l = 0; l < seqLen; ++l) {
    body += fmt::format("  const %s{0} = dense<i64[1]: {0}>\n  const %e{0} = dense<i64[1]: {1}>\n", l, l + 1);
    body += fmt::format("  %dbu{0} = Slice(%delta_bu, %s{0}, %e{0}, %ax3)\n", l);
    if (l == 0) {
      body += fmt::format("  %h{0} = Identity(%dbu{0})\n", l);
    } else {
      body += fmt::format("  %da{0} = Slice(%delta_a, %s{0}, %e{0}, %ax3)\n", l);
      body += fmt::format("  %hd{0} = Mul(%da{0}, %h{1})\n  %h{0} = Add(%hd{0}, %dbu{0})\n", l, l - 1);
    }
    states.push_back(fmt::format("%h{}", l));
  }
  body += fmt::format("  %h = Concat({}) {{axis = 3}}\n", fmt::join(states, ", "));
  body += R"(  %c4 = Unsqueeze(%c, %ax1)
  %hc = Mul(%h, %c4)
  %out = ReduceSum(%hc, %ax2) {keepdims = 0}
)";
  return runReference(irModel(inputs, body), inputs);
}

// fp32 throughout; the error is the ACT exp approximation and the fp32 order of the sums, growing
// with the recurrence's length.
double mambaAbsTolerance(DType) { return 1e-4; }
double mambaRelTolerance(DType) { return 1e-4; }

}  // namespace

std::vector<KernelDef> mambaKernels() {
  return {KernelDef{"mamba",
                    "out[b, c, l] = sum_s C[b, s, l] * h[b, c, s, l], h = exp(delta * A) * h[l-1] + delta * u * B "
                    "(the Mamba selective scan; one DVE scan per channel tile and state)",
                    {"B", "C", "L", "S"},
                    {{"B", 1}, {"C", 256}, {"L", 512}, {"S", 16}},
                    {DType::F32},
                    buildMamba,
                    referenceMamba,
                    mambaAbsTolerance,
                    mambaRelTolerance,
                    nullptr,
                    {"v1", "v2", "v3"}}};
}

}  // namespace tessel::nc::kernels
