// Reference kernel of Einsum: any equation numpy accepts, with explicit or implicit output,
// ellipsis broadcasting, and repeated labels (diagonals). The equation is parsed into labels per
// operand axis; the kernel then walks the joint index space of every label, output labels outer,
// summed labels inner, accumulating products in double.
#include <algorithm>
#include <map>
#include <string>

#include "ops/reference/nn_common.h"

namespace tessel::ref {

namespace {

/// Labels 0..51 are letters (a-z, then A-Z); ellipsis dims get kEllipsisLabel + position.
constexpr int kEllipsisLabel = 52;

int letterLabel(char c) { return c >= 'a' && c <= 'z' ? c - 'a' : c - 'A' + 26; }
bool isLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// One term of the equation: its letters' labels, and where (if anywhere) "..." stands.
struct Term {
  std::vector<int> letters;
  int ellipsisAt = -1;  // Index into `letters` before which the ellipsis dims go.
};

Expected<Term> parseTerm(const std::string &text) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (isLetter(text[i])) {
      term.letters.push_back(letterLabel(text[i]));
    } else if (text.compare(i, 3, "...") == 0 && term.ellipsisAt < 0) {
      term.ellipsisAt = static_cast<int>(term.letters.size());
      i += 2;
    } else {
      return makeError(ErrorCode::InvalidArgument, "einsum term '{}' has an unexpected '{}'", text, text[i]);
    }
  }
  return term;
}

/// The labels of each axis of a term standing for `rank` dims, given `maxEllipsis` dims in all.
Expected<std::vector<int>> axisLabels(const Term &term, int64_t rank, int64_t maxEllipsis, const std::string &text) {
  int64_t ellipsisDims = rank - static_cast<int64_t>(term.letters.size());
  if (ellipsisDims < 0 || (term.ellipsisAt < 0 && ellipsisDims != 0)) {
    return makeError(ErrorCode::ShapeMismatch, "einsum term '{}' does not fit an operand of rank {}", text, rank);
  }
  std::vector<int> labels(term.letters.begin(), term.letters.end());
  if (term.ellipsisAt >= 0) {
    std::vector<int> ellipsis;
    // Ellipsis dims align to the right across operands, so a shorter ellipsis takes the last labels.
    for (int64_t t = maxEllipsis - ellipsisDims; t < maxEllipsis; ++t) {
      ellipsis.push_back(kEllipsisLabel + static_cast<int>(t));
    }
    labels.insert(labels.begin() + term.ellipsisAt, ellipsis.begin(), ellipsis.end());
  }
  return labels;
}

std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == separator) parts.emplace_back();
    else parts.back() += c;
  }
  return parts;
}

}  // namespace

Status refEinsum(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, ctx.numInputs()));
  std::string equation;
  for (char c : ctx.node().attrString("equation", "")) {
    if (c != ' ') equation += c;
  }
  size_t arrow = equation.find("->");
  std::vector<std::string> inputTexts = split(equation.substr(0, arrow), ',');
  if (inputTexts.size() != ctx.numInputs()) {
    return makeError(ErrorCode::InvalidArgument, "equation '{}' has {} input terms; the node has {} inputs", equation,
                     inputTexts.size(), ctx.numInputs());
  }
  const DType dtype = ctx.tensor(0).dtype();
  if (!isFloatingPoint(dtype) && !isInteger(dtype)) {
    return makeError(ErrorCode::TypeMismatch, "Einsum takes numeric tensors; got {}", dtypeName(dtype));
  }
  std::vector<Term> terms;
  int64_t maxEllipsis = 0;
  for (size_t i = 0; i < inputTexts.size(); ++i) {
    TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, i));
    TESSEL_ASSIGN_OR_RETURN(Term term, parseTerm(inputTexts[i]));
    if (term.ellipsisAt >= 0) {
      maxEllipsis = std::max<int64_t>(maxEllipsis, static_cast<int64_t>(ctx.tensor(i).rank() - term.letters.size()));
    }
    terms.push_back(std::move(term));
  }
  // Sizes of every label; ellipsis dims broadcast, letters must agree.
  std::map<int, int64_t> labelSize;
  std::map<int, int> letterCount;
  std::vector<std::vector<int>> operandLabels;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Tensor &t = ctx.tensor(i);
    TESSEL_ASSIGN_OR_RETURN(std::vector<int> labels, axisLabels(terms[i], static_cast<int64_t>(t.rank()), maxEllipsis,
                                                                inputTexts[i]));
    for (size_t axis = 0; axis < labels.size(); ++axis) {
      int label = labels[axis];
      int64_t size = t.size(axis);
      if (label < kEllipsisLabel) ++letterCount[label];
      auto [it, inserted] = labelSize.emplace(label, size);
      if (inserted || it->second == size) continue;
      if (label >= kEllipsisLabel && (size == 1 || it->second == 1)) {
        it->second = std::max(it->second, size);
        continue;
      }
      return makeError(ErrorCode::ShapeMismatch, "equation '{}': operand {} has size {} for a label that has size {}",
                       equation, i, size, it->second);
    }
    operandLabels.push_back(std::move(labels));
  }
  // The output: explicit, or (implicit) the ellipsis dims then letters seen once, in ASCII order.
  std::vector<int> outLabels;
  if (arrow != std::string::npos) {
    std::string outText = equation.substr(arrow + 2);
    TESSEL_ASSIGN_OR_RETURN(Term outTerm, parseTerm(outText));
    TESSEL_ASSIGN_OR_RETURN(outLabels, axisLabels(outTerm, static_cast<int64_t>(outTerm.letters.size()) +
                                                               (outTerm.ellipsisAt >= 0 ? maxEllipsis : 0),
                                                  maxEllipsis, outText));
    for (size_t i = 0; i < outLabels.size(); ++i) {
      bool repeated = std::count(outLabels.begin(), outLabels.end(), outLabels[i]) > 1;
      if (repeated || !labelSize.count(outLabels[i])) {
        return makeError(ErrorCode::InvalidArgument, "equation '{}': output term '{}' repeats a label or uses one no "
                         "input has", equation, outText);
      }
    }
  } else {
    for (int64_t t = 0; t < maxEllipsis; ++t) outLabels.push_back(kEllipsisLabel + static_cast<int>(t));
    for (char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")) {
      if (letterCount[letterLabel(c)] == 1) outLabels.push_back(letterLabel(c));
    }
  }
  // Walk every label, output labels first (outer), summed labels after (inner).
  std::vector<int> walkLabels = outLabels;
  for (const auto &[label, size] : labelSize) {
    if (std::find(outLabels.begin(), outLabels.end(), label) == outLabels.end()) walkLabels.push_back(label);
  }
  std::vector<int64_t> walkSizes, outSizes;
  for (int label : walkLabels) walkSizes.push_back(labelSize[label]);
  for (int label : outLabels) outSizes.push_back(labelSize[label]);
  TESSEL_RETURN_IF_ERROR(checkWorkSize(outSizes, "the Einsum output"));
  const int64_t outCount = numElements(outSizes);
  const int64_t sumCount = outCount == 0 ? 0 : numElements(walkSizes) / std::max<int64_t>(outCount, 1);
  // For each operand axis, which walk position gives its coordinate (-1: a broadcast size-1 dim).
  std::vector<std::vector<double>> values;
  std::vector<std::vector<int64_t>> strides;
  std::vector<std::vector<int>> walkAxis;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Tensor &t = ctx.tensor(i);
    values.push_back(toDoubles(t));
    strides.push_back(stridesOf(t.sizes()));
    std::vector<int> axes;
    for (size_t axis = 0; axis < t.rank(); ++axis) {
      int label = operandLabels[i][axis];
      bool broadcast = t.size(axis) == 1 && labelSize[label] != 1;
      axes.push_back(broadcast ? -1 : static_cast<int>(std::find(walkLabels.begin(), walkLabels.end(), label) -
                                                       walkLabels.begin()));
    }
    walkAxis.push_back(std::move(axes));
  }
  std::vector<double> out(static_cast<size_t>(outCount), 0.0);
  std::vector<int64_t> index(walkLabels.size(), 0);
  for (int64_t step = 0; step < outCount * sumCount; ++step, nextIndex(index, walkSizes)) {
    double product = 1.0;
    for (size_t i = 0; i < values.size(); ++i) {
      int64_t offset = 0;
      for (size_t axis = 0; axis < walkAxis[i].size(); ++axis) {
        if (walkAxis[i][axis] >= 0) offset += index[static_cast<size_t>(walkAxis[i][axis])] * strides[i][axis];
      }
      product *= values[i][static_cast<size_t>(offset)];
    }
    out[static_cast<size_t>(step / sumCount)] += product;
  }
  ctx.setOutput(0, fromDoubles(dtype, outSizes, out));
  return Status::success();
}

}  // namespace tessel::ref
