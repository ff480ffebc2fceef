// Byte-footprint dependence analysis; see dependences.h. A footprint is a partition range and a
// sorted list of disjoint byte intervals (one per contiguous run of the access pattern; patterns
// with very many runs fall back to their hull). Each tile and HBM tensor keeps the records of its
// writes and the reads since; a new access is checked against those records only.
#include "targets/nc/tile/dependences.h"

#include <algorithm>
#include <numeric>

namespace tessel::nc::tile {
namespace {

/// Patterns with more contiguous runs than this are represented by their hull (conservative).
constexpr uint64_t kMaxIntervals = 4096;

struct Interval {
  uint64_t lo = 0, hi = 0;  // [lo, hi)
};

struct Footprint {
  uint32_t partLo = 0, partHi = 1;
  uint64_t lo = 0, hi = 0;          // Hull.
  std::vector<Interval> ranges;     // Sorted, disjoint, non-empty.
};

Footprint footprintOf(const AccessPattern &ap) {
  Footprint fp;
  if (ap.space != MemSpace::HBM) {
    fp.partLo = ap.startPartition;
    fp.partHi = ap.startPartition + ap.partitionCount;
  }
  const int64_t size = dtypeSizeBytes(ap.dtype);
  int64_t base = static_cast<int64_t>(ap.offsetBytes) / size;  // In elements relative to 0; offsets are aligned.
  int64_t baseRemainder = static_cast<int64_t>(ap.offsetBytes) - base * size;
  struct Dim {
    int64_t stride, count;
  };
  std::vector<Dim> dims;
  for (const FreeDim &dim : ap.dims) {
    if (dim.count <= 1 || dim.strideElements == 0) continue;
    int64_t stride = dim.strideElements;
    if (stride < 0) {
      base += stride * (static_cast<int64_t>(dim.count) - 1);
      stride = -stride;
    }
    dims.push_back(Dim{stride, dim.count});
  }
  std::sort(dims.begin(), dims.end(), [](const Dim &a, const Dim &b) { return a.stride < b.stride; });
  int64_t extent = 1;  // Elements from the first to past the last.
  for (const Dim &dim : dims) extent += dim.stride * (dim.count - 1);
  auto bytesAt = [&](int64_t element) { return static_cast<uint64_t>(element * size + baseRemainder); };
  fp.lo = bytesAt(base);
  fp.hi = bytesAt(base + extent);
  // Merge the innermost dims into one contiguous run where they chain.
  int64_t run = 1;
  size_t idx = 0;
  while (idx < dims.size() && dims[idx].stride <= run) {
    run += dims[idx].stride * (dims[idx].count - 1);
    ++idx;
  }
  uint64_t intervals = 1;
  for (size_t d = idx; d < dims.size() && intervals <= kMaxIntervals; ++d) intervals *= dims[d].count;
  if (intervals > kMaxIntervals) {
    fp.ranges.push_back(Interval{fp.lo, fp.hi});
    return fp;
  }
  std::vector<int64_t> counter(dims.size() - idx, 0);
  fp.ranges.reserve(intervals);
  for (uint64_t k = 0; k < intervals; ++k) {
    int64_t start = base;
    for (size_t d = idx; d < dims.size(); ++d) start += counter[d - idx] * dims[d].stride;
    fp.ranges.push_back(Interval{bytesAt(start), bytesAt(start + run)});
    for (size_t d = idx; d < dims.size(); ++d) {
      if (++counter[d - idx] < dims[d].count) break;
      counter[d - idx] = 0;
    }
  }
  std::sort(fp.ranges.begin(), fp.ranges.end(), [](const Interval &a, const Interval &b) { return a.lo < b.lo; });
  size_t out = 0;
  for (size_t k = 1; k < fp.ranges.size(); ++k) {
    if (fp.ranges[k].lo <= fp.ranges[out].hi)
      fp.ranges[out].hi = std::max(fp.ranges[out].hi, fp.ranges[k].hi);
    else
      fp.ranges[++out] = fp.ranges[k];
  }
  fp.ranges.resize(out + 1);
  return fp;
}

bool overlaps(const Footprint &a, const Footprint &b) {
  if (a.partHi <= b.partLo || b.partHi <= a.partLo || a.hi <= b.lo || b.hi <= a.lo) return false;
  size_t i = 0, j = 0;
  while (i < a.ranges.size() && j < b.ranges.size()) {
    const Interval &x = a.ranges[i], &y = b.ranges[j];
    if (x.lo < y.hi && y.lo < x.hi) return true;
    if (x.hi <= y.hi)
      ++i;
    else
      ++j;
  }
  return false;
}

/// Whether every byte of `b` is in `a`.
bool covers(const Footprint &a, const Footprint &b) {
  if (a.partLo > b.partLo || a.partHi < b.partHi || a.lo > b.lo || a.hi < b.hi) return false;
  size_t i = 0;
  for (const Interval &y : b.ranges) {
    while (i < a.ranges.size() && a.ranges[i].hi <= y.lo) ++i;
    if (i == a.ranges.size() || a.ranges[i].lo > y.lo || a.ranges[i].hi < y.hi) return false;
  }
  return true;
}

struct Record {
  int32_t op = -1;
  Footprint fp;
};

struct KeyState {
  std::vector<Record> writes, reads;
  bool predecessorsPending = false;
  Footprint whole;  // Tiles: the whole tile, for "a write covers the tile".
};

struct Access {
  int32_t key = -1;
  Footprint fp;
  bool read = false, write = false;
  bool covering = true;  // A write that surely writes every byte of fp.
};

}  // namespace

std::string_view dependenceKindName(DependenceKind kind) {
  switch (kind) {
    case DependenceKind::RAW: return "RAW";
    case DependenceKind::WAR: return "WAR";
    case DependenceKind::WAW: return "WAW";
    case DependenceKind::Order: return "order";
    case DependenceKind::Prefetch: return "prefetch";
  }
  return "?";
}

DependenceGraph computeDependences(const Kernel &kernel, const std::vector<Instruction> &insns,
                                   const Allocation &allocation) {
  const int32_t numTiles = static_cast<int32_t>(kernel.tiles.size());
  const size_t numOps = kernel.ops.size();
  std::vector<KeyState> states(kernel.tiles.size() + kernel.tensors.size());
  for (int32_t t = 0; t < numTiles; ++t) {
    const TilePlacement &placement = allocation.tiles[t];
    KeyState &state = states[t];
    state.predecessorsPending = !allocation.predecessors[t].empty();
    state.whole.partLo = 0;
    state.whole.partHi = static_cast<uint32_t>(kernel.tiles[t].partitions);
    state.whole.lo = placement.offsetBytes;
    state.whole.hi = placement.offsetBytes + tileDataBytes(kernel.tiles[t]);
    state.whole.ranges = {Interval{state.whole.lo, state.whole.hi}};
  }
  // HBM reads matter only before a later write of the same tensor (WAR): of an output, of scratch, or
  // of an input updated in place (a resident KV cache).
  std::vector<int64_t> lastHbmWrite(kernel.tensors.size(), -1);
  for (size_t i = 0; i < numOps; ++i) {
    const std::optional<OperandView> &dst = kernel.ops[i].operands.empty() ? std::nullopt : kernel.ops[i].operands[0];
    if (dst && dst->space == MemSpace::HBM) lastHbmWrite[dst->id] = static_cast<int64_t>(i);
  }

  DependenceGraph graph;
  graph.preds.resize(numOps);
  std::vector<int32_t> stamp(numOps, -1);
  std::vector<Access> accesses;
  int32_t lastCollective = -1;
  for (size_t i = 0; i < numOps; ++i) {
    const TileOp &op = kernel.ops[i];
    const int32_t self = static_cast<int32_t>(i);
    std::vector<Dependence> &preds = graph.preds[i];
    auto addDep = [&](int32_t producer, DependenceKind kind) {
      if (producer == self || stamp[producer] == self) return;
      stamp[producer] = self;
      preds.push_back(Dependence{producer, kind});
    };
    if (isCollective(op.opcode)) {
      if (lastCollective >= 0) addDep(lastCollective, DependenceKind::Order);
      lastCollective = self;
    }
    accesses.clear();
    const std::vector<OperandSlot> &slots = operandSlots(op.opcode);
    for (size_t s = 0; s < op.operands.size(); ++s) {
      if (!op.operands[s]) continue;
      const OperandView &view = *op.operands[s];
      Access access;
      access.key = view.space == MemSpace::HBM ? numTiles + view.id : view.id;
      access.fp = footprintOf(*insns[i].operands[s]);
      if (const auto &dynamic = insns[i].dynamicOffset; dynamic && dynamic->operand == s) {
        // Placed at launch: any bytes up to the bound; it overwrites none of them for certain.
        access.fp.hi += dynamic->strideBytes * dynamic->maxValue;
        access.fp.ranges = {Interval{access.fp.lo, access.fp.hi}};
        access.covering = false;
      }
      bool isDst = s == 0 || (s < slots.size() && slots[s].name == "accum");
      access.write = isDst;
      // Accumulating matmuls and collectives (in place across cores) also read their dst.
      access.read = !isDst || (op.opcode == Opcode::NcMatmul && op.accumulate) || isCollective(op.opcode);
      accesses.push_back(std::move(access));
    }
    // Dependences against the state before this op.
    for (const Access &access : accesses) {
      KeyState &state = states[access.key];
      if (access.key < numTiles && state.predecessorsPending) {
        for (int32_t previous : allocation.predecessors[access.key]) {
          for (const Record &record : states[previous].writes)
            addDep(record.op, access.read ? DependenceKind::RAW : DependenceKind::WAW);
          if (access.write)
            for (const Record &record : states[previous].reads) addDep(record.op, DependenceKind::WAR);
        }
      }
      for (const Record &record : state.writes)
        if (overlaps(record.fp, access.fp)) addDep(record.op, access.read ? DependenceKind::RAW : DependenceKind::WAW);
      if (access.write)
        for (const Record &record : state.reads)
          if (overlaps(record.fp, access.fp)) addDep(record.op, DependenceKind::WAR);
    }
    // Then record this op's accesses.
    for (Access &access : accesses) {
      KeyState &state = states[access.key];
      bool isTile = access.key < numTiles;
      if (access.read && !access.write &&
          (isTile || lastHbmWrite[access.key - numTiles] > static_cast<int64_t>(i)))
        state.reads.push_back(Record{self, access.fp});
      if (!access.write) continue;
      auto covered = [&](const Record &record) { return access.covering && covers(access.fp, record.fp); };
      state.writes.erase(std::remove_if(state.writes.begin(), state.writes.end(), covered), state.writes.end());
      state.reads.erase(std::remove_if(state.reads.begin(), state.reads.end(), covered), state.reads.end());
      if (isTile && state.predecessorsPending && access.covering && covers(access.fp, state.whole)) state.predecessorsPending = false;
      state.writes.push_back(Record{self, std::move(access.fp)});
    }
  }
  return graph;
}

}  // namespace tessel::nc::tile
