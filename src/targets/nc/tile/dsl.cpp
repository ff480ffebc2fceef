// The tile DSL: views (slicing, reshaping, broadcasting tiles and HBM tensors) and the KernelBuilder
// that records tile ops into Tile IR. Every op checks its operands against the machine profile and
// the tile rules of accelerator-model.md section 7 and reports the first violation with the op
// index, its kind and the offending values; views report out-of-range slices the same way.
#include "targets/nc/tile/dsl.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "targets/nc/isa/tile_rules.h"
#include "targets/nc/isa/verifier.h"

namespace tessel::nc::tile {
namespace {

int64_t product(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::vector<int64_t> dimCounts(const std::vector<FreeDim> &dims) {
  std::vector<int64_t> counts;
  for (const FreeDim &dim : dims) counts.push_back(dim.count);
  return counts;
}

/// Row-major dims of `shape` with innermost stride 1.
std::vector<FreeDim> rowMajorDims(const std::vector<int64_t> &shape) {
  std::vector<FreeDim> dims(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    dims[i] = FreeDim{stride, static_cast<uint32_t>(shape[i])};
    stride *= shape[i];
  }
  return dims;
}

/// Resolves a dim index that may be negative (-1 = innermost); -1 when out of range.
int resolveDim(int dim, size_t rank) {
  int resolved = dim < 0 ? dim + static_cast<int>(rank) : dim;
  return resolved >= 0 && resolved < static_cast<int>(rank) ? resolved : -1;
}

OperandView toOperand(const TileView &view) {
  return OperandView{view.space(), view.tile(), view.partitionStart(), view.partitions(), view.offsetElements(),
                     view.dims(), view.dtype()};
}

OperandView toOperand(const HbmView &view) {
  return OperandView{MemSpace::HBM, view.tensor(), 0, 1, view.offsetElements(), view.dims(), view.dtype()};
}

TileOp makeOp(TileOpKind kind, Opcode opcode, std::optional<Engine> engine,
              std::vector<std::optional<OperandView>> operands) {
  TileOp op;
  op.kind = kind;
  op.opcode = opcode;
  op.engine = engine;
  op.operands = std::move(operands);
  return op;
}

std::string shapeText(int64_t partitions, const std::vector<int64_t> &free) {
  return fmt::format("[{}{}{}]", partitions, free.empty() ? "" : ", ", fmt::join(free, ", "));
}

std::string shapeText(const TileView &view) { return shapeText(view.partitions(), view.freeShape()); }

}  // namespace

bool tensorScalarRunsOnAct(AluOp op0, AluOp op1) {
  return (op0 == AluOp::Multiply && (op1 == AluOp::None || op1 == AluOp::Add)) ||
         (op0 == AluOp::Add && op1 == AluOp::None);
}

namespace {

std::string tileName(const KernelBuilder *builder, int32_t tile) {
  if (!builder || tile < 0 || tile >= static_cast<int32_t>(builder->kernel().tiles.size())) return "?";
  return builder->kernel().tiles[tile].name;
}

}  // namespace

// ---- TileView -------------------------------------------------------------------------------------

std::vector<int64_t> TileView::freeShape() const { return dimCounts(dims_); }

int64_t TileView::freeSize() const { return product(freeShape()); }

TileView TileView::partitionSlice(int64_t start, int64_t count) const {
  if (start < 0 || count < 1 || start + count > partitionCount_) {
    if (builder_)
      builder_->fail(fmt::format("partitionSlice({}, {}) of a view with {} partitions (tile '{}'): outside [0, {})",
                                 start, count, partitionCount_, tileName(builder_, tile_), partitionCount_));
    return *this;
  }
  TileView view = *this;
  view.partitionStart_ += start;
  view.partitionCount_ = count;
  return view;
}

TileView TileView::slice(int dim, int64_t start, int64_t count) const {
  int d = resolveDim(dim, dims_.size());
  if (d < 0 || start < 0 || count < 1 || start + count > static_cast<int64_t>(dims_[d].count)) {
    if (builder_)
      builder_->fail(fmt::format("slice(dim {}, start {}, count {}) of a view with free shape [{}] (tile '{}'): {}", dim,
                                 start, count, fmt::join(freeShape(), ", "), tileName(builder_, tile_),
                                 d < 0 ? "no such dim" : "outside the dim"));
    return *this;
  }
  TileView view = *this;
  view.offsetElements_ += start * dims_[d].strideElements;
  view.dims_[d].count = static_cast<uint32_t>(count);
  return view;
}

TileView TileView::reshapeFree(const std::vector<int64_t> &shape) const {
  bool positive = std::all_of(shape.begin(), shape.end(), [](int64_t n) { return n >= 1; });
  if (dims_.empty() || shape.empty() || !positive || product(shape) != dims_.back().count ||
      dims_.size() - 1 + shape.size() > static_cast<size_t>(kMaxFreeDims)) {
    if (builder_)
      builder_->fail(fmt::format("reshapeFree([{}]) of a view with free shape [{}] (tile '{}'): the innermost dim "
                                 "must split into a product equal to its count, within {} free dims",
                                 fmt::join(shape, ", "), fmt::join(freeShape(), ", "), tileName(builder_, tile_), kMaxFreeDims));
    return *this;
  }
  TileView view = *this;
  int64_t stride = dims_.back().strideElements;
  view.dims_.pop_back();
  std::vector<FreeDim> split(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    split[i] = FreeDim{stride, static_cast<uint32_t>(shape[i])};
    stride *= shape[i];
  }
  view.dims_.insert(view.dims_.end(), split.begin(), split.end());
  return view;
}

TileView TileView::broadcastFree(int64_t count) const {
  bool replace = !dims_.empty() && dims_.back().count == 1;
  if (count < 1 || (!replace && dims_.size() >= static_cast<size_t>(kMaxFreeDims))) {
    if (builder_)
      builder_->fail(fmt::format("broadcastFree({}) of a view with free shape [{}] (tile '{}'): needs count >= 1 and "
                                 "room for one more free dim (at most {})",
                                 count, fmt::join(freeShape(), ", "), tileName(builder_, tile_), kMaxFreeDims));
    return *this;
  }
  TileView view = *this;
  if (replace) view.dims_.pop_back();
  view.dims_.push_back(FreeDim{0, static_cast<uint32_t>(count)});
  return view;
}

/// The lowest and one past the highest element `offset` + `dims` reach.
static std::pair<int64_t, int64_t> patternExtent(int64_t offset, const std::vector<FreeDim> &dims) {
  int64_t lo = offset, hi = offset;
  for (const FreeDim &dim : dims) {
    int64_t reach = dim.strideElements * (static_cast<int64_t>(dim.count) - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi + 1};
}

TileView TileView::pattern(int64_t offset, const std::vector<FreeDim> &dims) const {
  TileView view = *this;
  view.offsetElements_ += offset;
  view.dims_ = dims;
  if (builder_ && tile_ >= 0) {
    auto [lo, hi] = patternExtent(view.offsetElements_, dims);
    const int64_t size = product(builder_->kernel().tiles[tile_].freeShape);
    if (lo < 0 || hi > size || dims.size() > static_cast<size_t>(kMaxFreeDims)) {
      builder_->fail(fmt::format("pattern(offset {}, {} dims) of tile '{}' reaches elements [{}, {}) of {} (at most {} dims)",
                                 view.offsetElements_, dims.size(), tileName(builder_, tile_), lo, hi, size, kMaxFreeDims));
      return *this;
    }
  }
  return view;
}

// ---- HbmView --------------------------------------------------------------------------------------

std::vector<int64_t> HbmView::shape() const { return dimCounts(dims_); }

HbmView HbmView::slice(int dim, int64_t start, int64_t count) const {
  int d = resolveDim(dim, dims_.size());
  if (d < 0 || start < 0 || count < 1 || start + count > static_cast<int64_t>(dims_[d].count)) {
    if (builder_)
      builder_->fail(fmt::format("slice(dim {}, start {}, count {}) of HBM view with shape [{}] (tensor #{}): {}", dim,
                                 start, count, fmt::join(shape(), ", "), tensor_,
                                 d < 0 ? "no such dim" : "outside the dim"));
    return *this;
  }
  HbmView view = *this;
  view.offsetElements_ += start * dims_[d].strideElements;
  view.dims_[d].count = static_cast<uint32_t>(count);
  return view;
}

HbmView HbmView::transpose(int a, int b) const {
  int da = resolveDim(a, dims_.size()), db = resolveDim(b, dims_.size());
  if (da < 0 || db < 0) {
    if (builder_)
      builder_->fail(fmt::format("transpose({}, {}) of HBM view with shape [{}] (tensor #{}): no such dim", a, b,
                                 fmt::join(shape(), ", "), tensor_));
    return *this;
  }
  HbmView view = *this;
  std::swap(view.dims_[da], view.dims_[db]);
  return view;
}

HbmView HbmView::reshapeDim(int dim, const std::vector<int64_t> &shape) const {
  int d = resolveDim(dim, dims_.size());
  bool positive = std::all_of(shape.begin(), shape.end(), [](int64_t n) { return n >= 1; });
  if (d < 0 || shape.empty() || !positive || product(shape) != dims_[d].count) {
    if (builder_)
      builder_->fail(fmt::format("reshapeDim({}, [{}]) of HBM view with shape [{}] (tensor #{}): the dim must split "
                                 "into a product equal to its count",
                                 dim, fmt::join(shape, ", "), fmt::join(this->shape(), ", "), tensor_));
    return *this;
  }
  HbmView view = *this;
  int64_t stride = dims_[d].strideElements;
  std::vector<FreeDim> split(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    split[i] = FreeDim{stride, static_cast<uint32_t>(shape[i])};
    stride *= shape[i];
  }
  view.dims_.erase(view.dims_.begin() + d);
  view.dims_.insert(view.dims_.begin() + d, split.begin(), split.end());
  return view;
}

HbmView HbmView::broadcast(int dim, int64_t count) const {
  int d = resolveDim(dim, dims_.size());
  if (d < 0 || dims_[d].count != 1 || count < 1) {
    if (builder_)
      builder_->fail(fmt::format("broadcast({}, {}) of HBM view with shape [{}] (tensor #{}): the dim must exist and "
                                 "have count 1",
                                 dim, count, fmt::join(shape(), ", "), tensor_));
    return *this;
  }
  HbmView view = *this;
  view.dims_[d] = FreeDim{0, static_cast<uint32_t>(count)};
  return view;
}

HbmView HbmView::pattern(int64_t offset, const std::vector<FreeDim> &dims) const {
  HbmView view = *this;
  view.offsetElements_ += offset;
  view.dims_ = dims;
  if (builder_ && tensor_ >= 0) {
    auto [lo, hi] = patternExtent(view.offsetElements_, dims);
    const int64_t size = product(builder_->kernel().tensors[tensor_].shape);
    if (lo < 0 || hi > size) {
      builder_->fail(fmt::format("pattern(offset {}, {} dims) of HBM tensor '{}' reaches elements [{}, {}) of {}",
                                 view.offsetElements_, dims.size(), builder_->kernel().tensors[tensor_].name, lo, hi,
                                 size));
      return *this;
    }
  }
  return view;
}

// ---- KernelBuilder: declarations ------------------------------------------------------------------

KernelBuilder::KernelBuilder(std::string name, const MachineProfile &profile)
    : name_(std::move(name)), profile_(profile), limits_(isaLimitsFor(profile)) {
  kernel_.name = name_;
}

void KernelBuilder::fail(std::string message) {
  if (error_) return;
  error_ = makeError(ErrorCode::InvalidArgument, "kernel '{}': {}", name_, message);
}

Expected<Kernel> KernelBuilder::finish() {
  if (error_) return *error_;
  return kernel_;
}

HbmView KernelBuilder::input(const std::string &name, DType dtype, const std::vector<int64_t> &shape) {
  HbmView view;
  bool positive = std::all_of(shape.begin(), shape.end(), [](int64_t n) { return n >= 1; });
  if (shape.empty() || !positive || shape.size() > static_cast<size_t>(kMaxFreeDims)) {
    fail(fmt::format("tensor '{}': shape [{}] must have 1..{} dims, each >= 1", name, fmt::join(shape, ", "),
                     kMaxFreeDims));
    return view;
  }
  kernel_.tensors.push_back(HbmTensorDecl{name, dtype, shape, /*isOutput=*/false, /*isScratch=*/false});
  view.tensor_ = static_cast<int32_t>(kernel_.tensors.size() - 1);
  view.dtype_ = dtype;
  view.dims_ = rowMajorDims(shape);
  view.builder_ = this;
  return view;
}

HbmView KernelBuilder::constant(const std::string &name, DType dtype, const std::vector<int64_t> &shape) {
  HbmView view = input(name, dtype, shape);
  if (view.tensor_ >= 0) kernel_.tensors[static_cast<size_t>(view.tensor_)].isConstant = true;
  return view;
}

HbmView KernelBuilder::output(const std::string &name, DType dtype, const std::vector<int64_t> &shape) {
  HbmView view = input(name, dtype, shape);
  if (view.tensor_ >= 0) kernel_.tensors[view.tensor_].isOutput = true;
  return view;
}

namespace {

/// Shared by sbuf() and psum(): the whole-tile view of a new tile, or an error message.
std::string checkTileDecl(const MachineProfile &profile, const IsaLimits &limits, const TileDecl &decl) {
  bool positive = std::all_of(decl.freeShape.begin(), decl.freeShape.end(), [](int64_t n) { return n >= 1; });
  if (!partitionsInRange(limits, 0, decl.partitions))
    return fmt::format("tile '{}': {} partitions; must be 1..{} (T1)", decl.name, decl.partitions, profile.partitions);
  if (!positive || decl.freeShape.size() > static_cast<size_t>(kMaxFreeDims))
    return fmt::format("tile '{}': free shape [{}] must have at most {} dims, each >= 1", decl.name,
                       fmt::join(decl.freeShape, ", "), kMaxFreeDims);
  int64_t bytes = product(decl.freeShape) * dtypeSizeBytes(decl.dtype);
  if (decl.space == MemSpace::PSUM) {
    if (!withinOnePsumBank(limits, 0, static_cast<uint64_t>(bytes)))
      return fmt::format("tile '{}': {} bytes per partition in PSUM; a PSUM tile must fit one {}-byte bank (T2)",
                         decl.name, bytes, limits.psumBankBytes);
  } else if (bytes > profile.sbuf.bytesPerPartition) {
    return fmt::format("tile '{}': {} bytes per partition; SBUF has {}", decl.name, bytes,
                       profile.sbuf.bytesPerPartition);
  }
  return "";
}

}  // namespace

TileView KernelBuilder::sbuf(const std::string &name, DType dtype, int64_t partitions,
                             const std::vector<int64_t> &freeShape) {
  return newTile(TileDecl{name, MemSpace::SBUF, dtype, partitions, freeShape});
}

TileView KernelBuilder::psum(const std::string &name, DType dtype, int64_t partitions,
                             const std::vector<int64_t> &freeShape) {
  return newTile(TileDecl{name, MemSpace::PSUM, dtype, partitions, freeShape});
}

TileView KernelBuilder::newTile(const TileDecl &decl) {
  TileView view;
  view.builder_ = this;
  if (std::string error = checkTileDecl(profile_, limits_, decl); !error.empty()) {
    fail(error);
    return view;
  }
  kernel_.tiles.push_back(decl);
  view.tile_ = static_cast<int32_t>(kernel_.tiles.size() - 1);
  view.space_ = decl.space;
  view.dtype_ = decl.dtype;
  view.partitionCount_ = decl.partitions;
  view.dims_ = rowMajorDims(decl.freeShape);
  return view;
}

// ---- KernelBuilder: operand checks ----------------------------------------------------------------

std::string KernelBuilder::opPrefix(TileOpKind kind) const {
  return fmt::format("op #{} ({})", kernel_.ops.size(), tileOpKindName(kind));
}

bool KernelBuilder::checkTile(TileOpKind kind, const char *what, const TileView &view) {
  if (view.tile() < 0 || view.tile() >= static_cast<int32_t>(kernel_.tiles.size()) || view.builder_ != this) {
    fail(fmt::format("{}: {} is not a tile view of this kernel", opPrefix(kind), what));
    return false;
  }
  const TileDecl &decl = kernel_.tiles[view.tile()];
  const int64_t align = partitionStartAlignment(view.partitions(), profile_.partitions);  // T6
  if (view.partitionStart() % align != 0) {
    fail(fmt::format("{}: {} of tile '{}' starts at partition {} with {} partitions; the start must be a multiple "
                     "of {} (T6)",
                     opPrefix(kind), what, decl.name, view.partitionStart(), view.partitions(), align));
    return false;
  }
  for (const FreeDim &dim : view.dims()) {
    if (!accessDimEncodable(encodedStride(dim.strideElements, dim.count), dim.count)) {
      fail(fmt::format("{}: {} of tile '{}' has a free dim [stride {}, count {}] outside the int16 stride / uint16 "
                       "count of an access pattern",
                       opPrefix(kind), what, decl.name, dim.strideElements, dim.count));
      return false;
    }
  }
  return true;
}

bool KernelBuilder::checkHbm(TileOpKind kind, const char *what, const HbmView &view) {
  if (view.tensor() < 0 || view.tensor() >= static_cast<int32_t>(kernel_.tensors.size()) || view.builder_ != this) {
    fail(fmt::format("{}: {} is not an HBM view of this kernel", opPrefix(kind), what));
    return false;
  }
  if (view.dims().size() > static_cast<size_t>(kMaxFreeDims)) {
    fail(fmt::format("{}: {} of tensor '{}' has {} dims; an access pattern has at most {}", opPrefix(kind), what,
                     kernel_.tensors[view.tensor()].name, view.dims().size(), kMaxFreeDims));
    return false;
  }
  return true;
}

bool KernelBuilder::checkScalar(TileOpKind kind, const char *what, const ScalarOperand &scalar, const TileView &dst) {
  const TileView *view = std::get_if<TileView>(&scalar);
  if (!view) return true;
  if (!checkTile(kind, what, *view)) return false;
  if (view->freeSize() != 1 || view->partitions() != dst.partitions()) {
    fail(fmt::format("{}: {} must be [P, 1] with dst's {} partitions; got {}", opPrefix(kind), what, dst.partitions(),
                     shapeText(*view)));
    return false;
  }
  return true;
}

namespace {

bool engineReaches(const IsaLimits &limits, Engine engine, MemSpace space) {
  if (space == MemSpace::HBM) return engine == Engine::DMA;
  if (engine == Engine::POOL) return poolAccesses(limits, space);
  return engine != Engine::SP && engine != Engine::DMA;
}

}  // namespace

bool KernelBuilder::checkEngine(TileOpKind kind, Opcode opcode, std::optional<Engine> engine,
                                std::initializer_list<const TileView *> operands) {
  auto reachesAll = [&](Engine e) {
    return std::all_of(operands.begin(), operands.end(),
                       [&](const TileView *v) { return v == nullptr || engineReaches(limits_, e, v->space()); });
  };
  if (engine) {
    if (!(allowedEngines(opcode) & engineBit(*engine))) {
      fail(fmt::format("{}: engine {} cannot run {}", opPrefix(kind), engineName(*engine), mnemonic(opcode)));
      return false;
    }
    if (!reachesAll(*engine)) {
      fail(fmt::format("{}: engine {} cannot access an operand's memory (POOL has no PSUM access, T11)",
                       opPrefix(kind), engineName(*engine)));
      return false;
    }
    return true;
  }
  for (int e = 0; e < kNumEngines; ++e)
    if ((allowedEngines(opcode) & engineBit(static_cast<Engine>(e))) && reachesAll(static_cast<Engine>(e)))
      return true;
  fail(fmt::format("{}: no engine that runs {} reaches all its operands", opPrefix(kind), mnemonic(opcode)));
  return false;
}

void KernelBuilder::record(TileOp op) { kernel_.ops.push_back(std::move(op)); }

// ---- KernelBuilder: ops ---------------------------------------------------------------------------

void KernelBuilder::load(const TileView &dst, const HbmView &src) {
  const TileOpKind kind = TileOpKind::Load;
  if (!checkTile(kind, "dst", dst) || !checkHbm(kind, "src", src)) return;
  if (dst.space() != MemSpace::SBUF) {
    fail(fmt::format("{}: dst is in {}; DMA reaches SBUF only (PSUM is not reachable by DMA, section 4.3)",
                     opPrefix(kind), memSpaceName(dst.space())));
    return;
  }
  int64_t dstCount = dst.partitions() * dst.freeSize(), srcCount = product(src.shape());
  if (dstCount != srcCount) {
    fail(fmt::format("{}: dst {} has {} elements, src [{}] has {}", opPrefix(kind), shapeText(dst), dstCount,
                     fmt::join(src.shape(), ", "), srcCount));
    return;
  }
  record(makeOp(kind, Opcode::DmaCopy, Engine::DMA, {toOperand(dst), toOperand(src)}));
}

void KernelBuilder::store(const HbmView &dst, const TileView &src) {
  const TileOpKind kind = TileOpKind::Store;
  if (!checkHbm(kind, "dst", dst) || !checkTile(kind, "src", src)) return;
  if (src.space() != MemSpace::SBUF) {
    fail(fmt::format("{}: src is in {}; DMA reaches SBUF only (evict PSUM to SBUF first, section 4.3)",
                     opPrefix(kind), memSpaceName(src.space())));
    return;
  }
  int64_t dstCount = product(dst.shape()), srcCount = src.partitions() * src.freeSize();
  if (dstCount != srcCount) {
    fail(fmt::format("{}: dst [{}] has {} elements, src {} has {}", opPrefix(kind), fmt::join(dst.shape(), ", "),
                     dstCount, shapeText(src), srcCount));
    return;
  }
  record(makeOp(kind, Opcode::DmaCopy, Engine::DMA, {toOperand(dst), toOperand(src)}));
}

void KernelBuilder::storeAt(const HbmView &dst, const TileView &src, int reg, int64_t stepElements, int64_t maxValue) {
  if (reg < 0 || reg > UINT8_MAX || stepElements <= 0 || maxValue < 0 || maxValue > UINT32_MAX)
    return fail(fmt::format("{}: launch register r{}, step {}, bound {}: expected a register 0..255, a positive step "
                            "and a bound 0..{}",
                            opPrefix(TileOpKind::Store), reg, stepElements, maxValue, UINT32_MAX));
  const size_t before = kernel_.ops.size();
  dst.pattern(maxValue * stepElements, dst.dims());  // Fails unless the farthest window lies in the tensor.
  if (failed()) return;
  store(dst, src);
  if (kernel_.ops.size() == before + 1) kernel_.ops.back().launchOffset = TileOp::LaunchOffset{reg, stepElements, maxValue};
}

void KernelBuilder::matmul(const TileView &dst, const TileView &stationary, const TileView &moving, bool accumulate) {
  const TileOpKind kind = TileOpKind::Matmul;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "stationary", stationary) ||
      !checkTile(kind, "moving", moving))
    return;
  std::string p = opPrefix(kind);
  if (dst.space() != MemSpace::PSUM || dst.dtype() != DType::F32)
    return fail(fmt::format("{}: dst must be an f32 PSUM view; got {} {}", p, dtypeName(dst.dtype()),
                            memSpaceName(dst.space())));
  if (stationary.space() != MemSpace::SBUF || moving.space() != MemSpace::SBUF)
    return fail(fmt::format("{}: stationary and moving must be in SBUF; got {} and {}", p,
                            memSpaceName(stationary.space()), memSpaceName(moving.space())));
  if (!isPeInput(stationary.dtype()) || !isPeInput(moving.dtype()))
    return fail(fmt::format("{}: PE inputs must be f8e4m3/f8e5m2/bf16/f16/tf32/f32; got {} and {}", p,
                            dtypeName(stationary.dtype()), dtypeName(moving.dtype())));
  if (!peInputsPair(stationary.dtype(), moving.dtype()))
    return fail(fmt::format("{}: stationary {} with moving {}: f32/tf32 pair only with f32/tf32 (T12)", p,
                            dtypeName(stationary.dtype()), dtypeName(moving.dtype())));
  int64_t k = stationary.partitions(), m = stationary.freeSize(), n = moving.freeSize();
  if (moving.partitions() != k)
    return fail(fmt::format("{}: contraction K differs: stationary {} vs moving {} (T4)", p, shapeText(stationary),
                            shapeText(moving)));
  if (!matmulFits(limits_, k, m, n))
    return fail(fmt::format("{}: K = {}, M = {}, N = {}; limits K <= {}, M <= {}, N <= {} (T3)", p, k, m, n,
                            limits_.matmulMaxK, limits_.matmulMaxStationaryFree, limits_.matmulMaxMovingFree));
  if (dst.partitions() != m || dst.freeSize() != n)
    return fail(fmt::format("{}: dst {} must be [M, N] = [{}, {}]", p, shapeText(dst), m, n));
  TileOp op = makeOp(kind, Opcode::NcMatmul, Engine::PE, {toOperand(dst), toOperand(stationary), toOperand(moving)});
  op.accumulate = accumulate;
  record(std::move(op));
}

void KernelBuilder::transpose(const TileView &dst, const TileView &src) {
  const TileOpKind kind = TileOpKind::Transpose;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "src", src)) return;
  std::string p = opPrefix(kind);
  // PE writes PSUM; a transpose into SBUF runs on DVE (32x32 blocks, T9).
  bool onPe = dst.space() == MemSpace::PSUM;
  const int64_t limit = transposeLimit(limits_, onPe);
  if (onPe && src.space() != MemSpace::SBUF)
    return fail(fmt::format("{}: PE transpose reads SBUF; src is in {}", p, memSpaceName(src.space())));
  if (dst.dtype() != src.dtype())
    return fail(fmt::format("{}: dst dtype {} differs from src dtype {} (T9)", p, dtypeName(dst.dtype()),
                            dtypeName(src.dtype())));
  if (src.partitions() > limit || src.freeSize() > limit)
    return fail(fmt::format("{}: src {} exceeds the {} transpose limit {}x{} (T9)", p, shapeText(src),
                            onPe ? "PE" : "DVE", limit, limit));
  if (dst.partitions() != src.freeSize() || dst.freeSize() != src.partitions())
    return fail(fmt::format("{}: dst {} is not the transpose of src {}", p, shapeText(dst), shapeText(src)));
  record(makeOp(kind, Opcode::NcTranspose, onPe ? Engine::PE : Engine::DVE, {toOperand(dst), toOperand(src)}));
}

void KernelBuilder::activation(const TileView &dst, const TileView &src, ActFunc func, const ActivationArgs &args) {
  const TileOpKind kind = TileOpKind::Activation;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "src", src) || !checkScalar(kind, "scale", args.scale, dst))
    return;
  if (args.bias && !checkScalar(kind, "bias", *args.bias, dst)) return;
  std::string p = opPrefix(kind);
  if (func == ActFunc::None) return fail(fmt::format("{}: func is required", p));
  if (dst.partitions() != src.partitions() || dst.freeSize() != src.freeSize())
    return fail(fmt::format("{}: dst {} and src {} must have the same partitions and free size", p, shapeText(dst),
                            shapeText(src)));
  if (args.accum) {
    if (!checkTile(kind, "accum", *args.accum)) return;
    if (args.accum->freeSize() != 1 || args.accum->partitions() != dst.partitions() ||
        args.accum->dtype() != DType::F32)
      return fail(fmt::format("{}: accum must be an f32 [P, 1] view with dst's {} partitions; got {} {}", p,
                              dst.partitions(), dtypeName(args.accum->dtype()), shapeText(*args.accum)));
    if (!actReduceOpSupported(limits_, args.accumOp))
      return fail(fmt::format("{}: ACT reduce op {} not supported on {}; supported: {} (T15)", p,
                              aluOpName(args.accumOp), profile_.name, fmt::join(profile_.act.reduceOps, ", ")));
  }
  // An immediate bias the profile cannot encode (T15, nc-v2) becomes a [P, 1] constant tile.
  std::optional<TileView> biasView;
  float biasImmediate = 0;
  if (args.bias) {
    if (const TileView *view = std::get_if<TileView>(&*args.bias)) {
      biasView = *view;
    } else {
      biasImmediate = std::get<float>(*args.bias);
      if (!actTakesImmediateBias(limits_, biasImmediate)) {
        TileView constant = sbuf(fmt::format("bias.op{}", kernel_.ops.size()), DType::F32, dst.partitions(), {1});
        memset(constant, biasImmediate, std::nullopt);
        biasView = constant;
        biasImmediate = 0;
      }
    }
  }
  std::optional<OperandView> scaleOperand;
  float scaleImmediate = 1;
  if (const TileView *view = std::get_if<TileView>(&args.scale))
    scaleOperand = toOperand(*view);
  else
    scaleImmediate = std::get<float>(args.scale);
  TileOp op = makeOp(kind, Opcode::Activation, Engine::ACT, {toOperand(dst), toOperand(src)});
  op.operands.push_back(biasView ? std::optional<OperandView>(toOperand(*biasView)) : std::nullopt);
  op.operands.push_back(args.accum ? std::optional<OperandView>(toOperand(*args.accum)) : std::nullopt);
  op.operands.push_back(scaleOperand);
  op.func = func;
  if (args.accum) op.op0 = args.accumOp;
  op.scalars = {scaleImmediate, biasImmediate};
  record(std::move(op));
}

bool KernelBuilder::checkElementwisePair(TileOpKind kind, const TileView &dst, const TileView &a, const TileView &b) {
  std::string p = opPrefix(kind);
  if (a.partitions() != dst.partitions() || b.partitions() != dst.partitions() || a.freeSize() != dst.freeSize() ||
      b.freeSize() != dst.freeSize()) {
    fail(fmt::format("{}: dst {}, a {} and b {} must have the same partitions and free size", p, shapeText(dst),
                     shapeText(a), shapeText(b)));
    return false;
  }
  if (!inputsNotBothInPsum(a.space(), b.space())) {
    fail(fmt::format("{}: a and b both in PSUM (T11)", p));
    return false;
  }
  return true;
}

void KernelBuilder::tensorTensor(const TileView &dst, const TileView &a, const TileView &b, AluOp op,
                                 std::optional<Engine> engine) {
  const TileOpKind kind = TileOpKind::TensorTensor;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "a", a) || !checkTile(kind, "b", b)) return;
  if (op == AluOp::None) return fail(fmt::format("{}: op is required", opPrefix(kind)));
  if (!checkElementwisePair(kind, dst, a, b)) return;
  if (!checkEngine(kind, Opcode::TensorTensor, engine, {&dst, &a, &b})) return;
  TileOp tileOp = makeOp(kind, Opcode::TensorTensor, engine, {toOperand(dst), toOperand(a), toOperand(b)});
  tileOp.op0 = op;
  record(std::move(tileOp));
}

void KernelBuilder::tensorTensorScan(const TileView &dst, const TileView &a, const TileView &b, AluOp op0, AluOp op1,
                                     ScalarOperand initial) {
  const TileOpKind kind = TileOpKind::TensorTensorScan;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "a", a) || !checkTile(kind, "b", b) ||
      !checkScalar(kind, "initial", initial, dst))
    return;
  if (op0 == AluOp::None || op1 == AluOp::None)
    return fail(fmt::format("{}: op0 and op1 are required", opPrefix(kind)));
  if (!checkElementwisePair(kind, dst, a, b)) return;
  if (!checkEngine(kind, Opcode::TensorTensorScan, Engine::DVE, {&dst, &a, &b})) return;
  TileOp tileOp = makeOp(kind, Opcode::TensorTensorScan, Engine::DVE, {toOperand(dst), toOperand(a), toOperand(b)});
  float imm = 0;
  if (const TileView *view = std::get_if<TileView>(&initial))
    tileOp.operands.push_back(toOperand(*view));
  else
    tileOp.operands.push_back(std::nullopt), imm = std::get<float>(initial);
  tileOp.op0 = op0;
  tileOp.op1 = op1;
  tileOp.scalars = {imm};
  record(std::move(tileOp));
}

void KernelBuilder::tensorScalar(const TileView &dst, const TileView &src, AluOp op0, ScalarOperand s0, AluOp op1,
                                 ScalarOperand s1, std::optional<Engine> engine) {
  const TileOpKind kind = TileOpKind::TensorScalar;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "src", src) || !checkScalar(kind, "s0", s0, dst) ||
      !checkScalar(kind, "s1", s1, dst))
    return;
  std::string p = opPrefix(kind);
  if (op0 == AluOp::None) return fail(fmt::format("{}: op0 is required", p));
  if (op1 == AluOp::None && std::holds_alternative<TileView>(s1))
    return fail(fmt::format("{}: s1 is a tile view but op1 is none", p));
  if (dst.partitions() != src.partitions() || dst.freeSize() != src.freeSize())
    return fail(fmt::format("{}: dst {} and src {} must have the same partitions and free size", p, shapeText(dst),
                            shapeText(src)));
  if (engine == Engine::ACT && !tensorScalarRunsOnAct(op0, op1))
    return fail(fmt::format("{}: ACT runs tensor_scalar only as multiply, add or multiply then add; got {} then {}",
                            p, aluOpName(op0), aluOpName(op1)));
  if (!checkEngine(kind, Opcode::TensorScalar, engine, {&dst, &src})) return;
  TileOp tileOp = makeOp(kind, Opcode::TensorScalar, engine, {toOperand(dst), toOperand(src)});
  float imm0 = 0, imm1 = 0;
  if (const TileView *view = std::get_if<TileView>(&s0))
    tileOp.operands.push_back(toOperand(*view));
  else
    tileOp.operands.push_back(std::nullopt), imm0 = std::get<float>(s0);
  if (const TileView *view = std::get_if<TileView>(&s1))
    tileOp.operands.push_back(toOperand(*view));
  else
    tileOp.operands.push_back(std::nullopt), imm1 = std::get<float>(s1);
  tileOp.op0 = op0;
  tileOp.op1 = op1;
  tileOp.scalars = {imm0, imm1};
  record(std::move(tileOp));
}

void KernelBuilder::tensorScalarReduce(const TileView &dst, const TileView &src, AluOp op0, ScalarOperand s0,
                                       const TileView &accum, AluOp reduceOp) {
  const TileOpKind kind = TileOpKind::TensorScalarReduce;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "src", src) || !checkScalar(kind, "s0", s0, dst) ||
      !checkScalar(kind, "accum", accum, dst))
    return;
  std::string p = opPrefix(kind);
  if (op0 == AluOp::None) return fail(fmt::format("{}: op0 is required", p));
  if (reduceOp != AluOp::Add && reduceOp != AluOp::Subtract && reduceOp != AluOp::Multiply &&
      reduceOp != AluOp::Maximum && reduceOp != AluOp::Minimum)
    return fail(fmt::format("{}: reduce op {} is not one of add, subtract, multiply, maximum, minimum", p,
                            aluOpName(reduceOp)));
  if (dst.partitions() != src.partitions() || dst.freeSize() != src.freeSize())
    return fail(fmt::format("{}: dst {} and src {} must have the same partitions and free size", p, shapeText(dst),
                            shapeText(src)));
  if (!checkEngine(kind, Opcode::TensorScalarReduce, Engine::DVE, {&dst, &src, &accum})) return;
  TileOp tileOp =
      makeOp(kind, Opcode::TensorScalarReduce, Engine::DVE, {toOperand(dst), toOperand(src), toOperand(accum)});
  float imm = 0;
  if (const TileView *view = std::get_if<TileView>(&s0))
    tileOp.operands.push_back(toOperand(*view));
  else
    tileOp.operands.push_back(std::nullopt), imm = std::get<float>(s0);
  tileOp.op0 = op0;
  tileOp.op1 = reduceOp;
  tileOp.scalars = {imm};
  record(std::move(tileOp));
}

void KernelBuilder::reduce(const TileView &dst, const TileView &src, AluOp op) {
  const TileOpKind kind = TileOpKind::Reduce;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "src", src)) return;
  std::string p = opPrefix(kind);
  if (op == AluOp::None) return fail(fmt::format("{}: op is required", p));
  if (src.dims().empty()) return fail(fmt::format("{}: src {} has no free dim to reduce", p, shapeText(src)));
  int64_t outer = src.freeSize() / src.dims().back().count;
  if (dst.partitions() != src.partitions() || dst.freeSize() != outer)
    return fail(fmt::format("{}: dst {} must have src {}'s partitions and {} elements (the free dims without the "
                            "innermost)",
                            p, shapeText(dst), shapeText(src), outer));
  TileOp tileOp = makeOp(kind, Opcode::TensorReduce, Engine::DVE, {toOperand(dst), toOperand(src)});
  tileOp.op0 = op;
  record(std::move(tileOp));
}

void KernelBuilder::copy(const TileView &dst, const TileView &src, std::optional<Engine> engine) {
  const TileOpKind kind = TileOpKind::Copy;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "src", src)) return;
  if (dst.partitions() != src.partitions() || dst.freeSize() != src.freeSize())
    return fail(fmt::format("{}: dst {} and src {} must have the same partitions and free size", opPrefix(kind),
                            shapeText(dst), shapeText(src)));
  if (!checkEngine(kind, Opcode::TensorCopy, engine, {&dst, &src})) return;
  record(makeOp(kind, Opcode::TensorCopy, engine, {toOperand(dst), toOperand(src)}));
}

void KernelBuilder::memset(const TileView &dst, float value, std::optional<Engine> engine) {
  const TileOpKind kind = TileOpKind::Memset;
  if (!checkTile(kind, "dst", dst) || !checkEngine(kind, Opcode::Memset, engine, {&dst})) return;
  TileOp op = makeOp(kind, Opcode::Memset, engine, {toOperand(dst)});
  op.scalars = {value};
  record(std::move(op));
}

bool KernelBuilder::checkCollective(TileOpKind kind, const TileView &dst, int cores) {
  if (!checkTile(kind, "dst", dst)) return false;
  if (dst.space() != MemSpace::SBUF) {
    fail(fmt::format("{}: dst must be in SBUF, got {}", opPrefix(kind), memSpaceName(dst.space())));
    return false;
  }
  if (cores < 1 || cores > UINT8_MAX) {
    fail(fmt::format("{}: cores must be 1..{}; got {}", opPrefix(kind), UINT8_MAX, cores));
    return false;
  }
  return true;
}

void KernelBuilder::allGather(const TileView &dst, int cores) {
  const TileOpKind kind = TileOpKind::AllGather;
  if (!checkCollective(kind, dst, cores)) return;
  if (dst.partitions() % cores != 0) {
    fail(fmt::format("{}: dst {} has {} partitions, which do not split into {} equal parts, one per core",
                     opPrefix(kind), shapeText(dst), dst.partitions(), cores));
    return;
  }
  TileOp op = makeOp(kind, Opcode::AllGather, Engine::SP, {toOperand(dst)});
  op.cores = cores;
  record(std::move(op));
}

void KernelBuilder::allReduce(const TileView &dst, AluOp op, int cores) {
  const TileOpKind kind = TileOpKind::AllReduce;
  if (!checkCollective(kind, dst, cores)) return;
  if (op != AluOp::Add) {
    fail(fmt::format("{}: op {} is not add; allReduce supports add only", opPrefix(kind), aluOpName(op)));
    return;
  }
  if (dst.dtype() != DType::F32 && dst.dtype() != DType::BF16) {
    fail(fmt::format("{}: dst dtype {} is not f32 or bf16", opPrefix(kind), dtypeName(dst.dtype())));
    return;
  }
  TileOp reduce = makeOp(kind, Opcode::AllReduce, Engine::SP, {toOperand(dst)});
  reduce.op0 = op;
  reduce.cores = cores;
  record(std::move(reduce));
}

void KernelBuilder::iota(const TileView &dst, float offset, float partitionMultiplier, float step) {
  const TileOpKind kind = TileOpKind::Iota;
  if (!checkTile(kind, "dst", dst) || !checkEngine(kind, Opcode::Iota, Engine::POOL, {&dst})) return;
  TileOp op = makeOp(kind, Opcode::Iota, Engine::POOL, {toOperand(dst)});
  op.scalars = {offset, partitionMultiplier, step};
  record(std::move(op));
}

void KernelBuilder::affineSelect(const TileView &dst, const TileView &src, float partitionMultiplier,
                                 float freeMultiplier, float offset, float fill) {
  const TileOpKind kind = TileOpKind::AffineSelect;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "src", src)) return;
  if (dst.partitions() != src.partitions() || dst.freeSize() != src.freeSize())
    return fail(fmt::format("{}: dst {} and src {} must have the same partitions and free size", opPrefix(kind),
                            shapeText(dst), shapeText(src)));
  if (!checkEngine(kind, Opcode::AffineSelect, Engine::POOL, {&dst, &src})) return;
  TileOp op = makeOp(kind, Opcode::AffineSelect, Engine::POOL, {toOperand(dst), toOperand(src)});
  op.scalars = {fill, partitionMultiplier, freeMultiplier, offset};
  record(std::move(op));
}

void KernelBuilder::bnStats(const TileView &dst, const TileView &src) {
  const TileOpKind kind = TileOpKind::BnStats;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "src", src)) return;
  if (!bnStatsFits(limits_, static_cast<uint64_t>(src.freeSize())))
    return fail(fmt::format("{}: src {} has {} elements per partition; at most {} (T8)", opPrefix(kind),
                            shapeText(src), src.freeSize(), limits_.bnStatsMaxFree));
  if (dst.partitions() != src.partitions() || dst.freeSize() != 6)
    return fail(fmt::format("{}: dst {} must be [{}, 6]", opPrefix(kind), shapeText(dst), src.partitions()));
  record(makeOp(kind, Opcode::BnStats, Engine::DVE, {toOperand(dst), toOperand(src)}));
}

void KernelBuilder::bnAggr(const TileView &dst, const TileView &src) {
  const TileOpKind kind = TileOpKind::BnAggr;
  if (!checkTile(kind, "dst", dst) || !checkTile(kind, "src", src)) return;
  if (src.freeSize() % 6 != 0)
    return fail(fmt::format("{}: src {} must hold whole bn_stats outputs (a multiple of 6 elements)", opPrefix(kind),
                            shapeText(src)));
  if (dst.partitions() != src.partitions() || dst.freeSize() != 2)
    return fail(fmt::format("{}: dst {} must be [{}, 2]", opPrefix(kind), shapeText(dst), src.partitions()));
  record(makeOp(kind, Opcode::BnAggr, Engine::DVE, {toOperand(dst), toOperand(src)}));
}

}  // namespace tessel::nc::tile
