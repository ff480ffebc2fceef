// Reference kernels of the signal family: DFT, STFT, the Hann, Hamming and Blackman windows and
// MelWeightMatrix. Complex tensors follow ONNX's convention of a trailing dimension of 2 (real,
// imaginary); a trailing 1 means real input. Transforms are direct O(n^2) sums in double, with
// angles reduced modulo the length first so long transforms keep their precision.
#include <cmath>
#include <complex>
#include <numbers>

#include "ops/reference/helpers.h"

namespace tessel::ref {

namespace {

using Complex = std::complex<double>;

/// The first `numOut` bins of the length-`length` DFT of `in`, zero-padded or truncated to
/// `length`. The inverse transform uses e^{+i...} and divides by `length`.
std::vector<Complex> dft(const std::vector<Complex> &in, int64_t length, int64_t numOut, bool inverse) {
  const int64_t used = std::min<int64_t>(length, static_cast<int64_t>(in.size()));
  const double sign = inverse ? 1.0 : -1.0;
  std::vector<Complex> out(static_cast<size_t>(numOut));
  for (int64_t k = 0; k < numOut; ++k) {
    Complex sum = 0.0;
    for (int64_t j = 0; j < used; ++j) {
      const double angle = sign * 2.0 * std::numbers::pi * static_cast<double>((j * k) % length) / length;
      sum += in[j] * Complex(std::cos(angle), std::sin(angle));
    }
    out[k] = inverse ? sum / static_cast<double>(length) : sum;
  }
  return out;
}

/// Reads a scalar (or one-element) integer input.
Expected<int64_t> scalarInt(const KernelContext &ctx, size_t index, const char *what) {
  const Tensor &t = ctx.tensor(index);
  if (!isInteger(t.dtype()) || t.numel() != 1) {
    return makeError(ErrorCode::InvalidArgument, "{}: {} must be one integer; got {} of shape {}",
                     ctx.node().opType(), what, dtypeName(t.dtype()), formatSizes(t.sizes()));
  }
  return t.scalarAsInt64();
}

/// Checks a signal-like input: floating point, rank >= 2, trailing dimension 1 (real) or 2 (complex).
Status expectSignal(const KernelContext &ctx, size_t index, const char *what) {
  const Tensor &t = ctx.tensor(index);
  if (!isFloatingPoint(t.dtype())) {
    return makeError(ErrorCode::TypeMismatch, "{}: {} must be floating point; got {}", ctx.node().opType(), what,
                     dtypeName(t.dtype()));
  }
  if (t.rank() < 2 || (t.sizes().back() != 1 && t.sizes().back() != 2)) {
    return makeError(ErrorCode::ShapeMismatch,
                     "{}: {} has shape {}; expected rank >= 2 ending in 1 (real) or 2 (complex)",
                     ctx.node().opType(), what, formatSizes(t.sizes()));
  }
  return Status::success();
}

/// The output dtype named by the output_datatype attribute (default float).
Expected<DType> outputDType(const KernelContext &ctx) {
  const int64_t raw = ctx.node().attrInt("output_datatype", static_cast<int64_t>(DType::Float32));
  if (!isValidDType(raw) || !(isFloatingPoint(static_cast<DType>(raw)) || isInteger(static_cast<DType>(raw)))) {
    return makeError(ErrorCode::InvalidArgument, "{}: output_datatype {} is not a numeric ONNX type",
                     ctx.node().opType(), raw);
  }
  return static_cast<DType>(raw);
}

/// sum_m coefficients[m] * cos(2*pi*m*k / N) for k < size, N = size (periodic) or size - 1.
Status cosineWindow(KernelContext &ctx, std::initializer_list<double> coefficients) {
  TESSEL_ASSIGN_OR_RETURN(int64_t size, scalarInt(ctx, 0, "size"));
  TESSEL_ASSIGN_OR_RETURN(DType dtype, outputDType(ctx));
  if (size < 0) return makeError(ErrorCode::InvalidArgument, "{}: size {} is negative", ctx.node().opType(), size);
  const bool periodic = ctx.node().attrInt("periodic", 1) != 0;
  const int64_t denominator = periodic ? size : size - 1;
  std::vector<double> values(static_cast<size_t>(size), 1.0);  // A one-point symmetric window is 1.
  if (denominator > 0) {
    for (int64_t k = 0; k < size; ++k) {
      double sum = 0.0;
      int64_t m = 0;
      for (double a : coefficients) {
        sum += a * std::cos(2.0 * std::numbers::pi * static_cast<double>((m * k) % denominator) / denominator);
        ++m;
      }
      values[k] = sum;
    }
  }
  ctx.setOutput(0, fromDoubles(dtype, {size}, values));
  return Status::success();
}

double hertzToMel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double melToHertz(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

}  // namespace

Status refDFT(KernelContext &ctx) {
  const std::string op = ctx.node().opType();
  TESSEL_RETURN_IF_ERROR(expectSignal(ctx, 0, "input"));
  const Tensor &input = ctx.tensor(0);
  const std::vector<int64_t> &sizes = input.sizes();
  const int64_t rank = static_cast<int64_t>(sizes.size());
  int64_t axis = ctx.node().attrInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank - 1) {
    return makeError(ErrorCode::InvalidArgument, "{}: axis {} is out of range for an input of rank {}", op,
                     ctx.node().attrInt("axis", 1), rank);
  }
  const bool inverse = ctx.node().attrInt("inverse", 0) != 0;
  const bool onesided = ctx.node().attrInt("onesided", 0) != 0;
  const bool complexInput = sizes.back() == 2;
  if (onesided && complexInput) {
    return makeError(ErrorCode::InvalidArgument, "{}: onesided output needs a real input; got shape {}", op,
                     formatSizes(sizes));
  }
  int64_t length = sizes[axis];
  if (ctx.hasInput(1)) {
    TESSEL_ASSIGN_OR_RETURN(length, scalarInt(ctx, 1, "dft_length"));
  }
  if (length <= 0) return makeError(ErrorCode::InvalidArgument, "{}: dft_length {} must be positive", op, length);
  const int64_t numOut = onesided ? length / 2 + 1 : length;

  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= sizes[i];
  for (int64_t i = axis + 1; i < rank - 1; ++i) inner *= sizes[i];
  const int64_t n = sizes[axis], channels = sizes.back();
  const std::vector<double> in = toDoubles(input);
  std::vector<double> out(static_cast<size_t>(outer * numOut * inner * 2));
  std::vector<Complex> line(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = ((o * n + j) * inner + i) * channels;
        line[j] = Complex(in[at], complexInput ? in[at + 1] : 0.0);
      }
      const std::vector<Complex> bins = dft(line, length, numOut, inverse);
      for (int64_t k = 0; k < numOut; ++k) {
        const int64_t at = ((o * numOut + k) * inner + i) * 2;
        out[at] = bins[k].real();
        out[at + 1] = bins[k].imag();
      }
    }
  }
  std::vector<int64_t> outSizes = sizes;
  outSizes[axis] = numOut;
  outSizes.back() = 2;
  ctx.setOutput(0, fromDoubles(input.dtype(), outSizes, out));
  return Status::success();
}

Status refSTFT(KernelContext &ctx) {
  const std::string op = ctx.node().opType();
  TESSEL_RETURN_IF_ERROR(expectSignal(ctx, 0, "signal"));
  const Tensor &signal = ctx.tensor(0);
  if (signal.rank() != 3) {
    return makeError(ErrorCode::ShapeMismatch, "{}: signal has shape {}; expected [batch, length, 1 or 2]", op,
                     formatSizes(signal.sizes()));
  }
  const int64_t batch = signal.size(0), signalLength = signal.size(1), channels = signal.size(2);
  TESSEL_ASSIGN_OR_RETURN(int64_t step, scalarInt(ctx, 1, "frame_step"));
  if (step <= 0) return makeError(ErrorCode::InvalidArgument, "{}: frame_step {} must be positive", op, step);

  std::vector<double> window;
  int64_t frameLength = -1;
  if (ctx.hasInput(2)) {
    TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 2));
    const Tensor &w = ctx.tensor(2);
    if (w.rank() != 1) {
      return makeError(ErrorCode::ShapeMismatch, "{}: window has shape {}; expected rank 1", op,
                       formatSizes(w.sizes()));
    }
    window = toDoubles(w);
    frameLength = w.size(0);
  }
  if (ctx.hasInput(3)) {
    TESSEL_ASSIGN_OR_RETURN(int64_t given, scalarInt(ctx, 3, "frame_length"));
    if (frameLength >= 0 && given != frameLength) {
      return makeError(ErrorCode::InvalidArgument, "{}: frame_length {} differs from the window length {}", op, given,
                       frameLength);
    }
    frameLength = given;
  }
  if (frameLength < 0) return makeError(ErrorCode::InvalidArgument, "{}: needs a window or frame_length", op);
  if (frameLength == 0 || frameLength > signalLength) {
    return makeError(ErrorCode::InvalidArgument, "{}: frame length {} must be in [1, {}] (the signal length)", op,
                     frameLength, signalLength);
  }
  if (window.empty()) window.assign(static_cast<size_t>(frameLength), 1.0);
  const bool onesided = ctx.node().attrInt("onesided", 1) != 0;
  if (onesided && channels == 2) {
    return makeError(ErrorCode::InvalidArgument, "{}: onesided output needs a real signal; set onesided=0", op);
  }

  const int64_t frames = (signalLength - frameLength) / step + 1;
  const int64_t numBins = onesided ? frameLength / 2 + 1 : frameLength;
  const std::vector<double> in = toDoubles(signal);
  std::vector<double> out(static_cast<size_t>(batch * frames * numBins * 2));
  std::vector<Complex> frame(static_cast<size_t>(frameLength));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < frameLength; ++j) {
        const int64_t at = (b * signalLength + f * step + j) * channels;
        frame[j] = Complex(in[at], channels == 2 ? in[at + 1] : 0.0) * window[j];
      }
      const std::vector<Complex> bins = dft(frame, frameLength, numBins, /*inverse=*/false);
      for (int64_t k = 0; k < numBins; ++k) {
        const int64_t at = ((b * frames + f) * numBins + k) * 2;
        out[at] = bins[k].real();
        out[at + 1] = bins[k].imag();
      }
    }
  }
  ctx.setOutput(0, fromDoubles(signal.dtype(), {batch, frames, numBins, 2}, out));
  return Status::success();
}

Status refHannWindow(KernelContext &ctx) { return cosineWindow(ctx, {0.5, -0.5}); }

Status refHammingWindow(KernelContext &ctx) { return cosineWindow(ctx, {25.0 / 46.0, -21.0 / 46.0}); }

Status refBlackmanWindow(KernelContext &ctx) { return cosineWindow(ctx, {0.42, -0.5, 0.08}); }

/// Triangular filters on the mel scale, as the ONNX reference and onnxruntime compute them: the
/// mel range is cut into num_mel_bins + 2 steps and each edge snaps down to an FFT bin.
Status refMelWeightMatrix(KernelContext &ctx) {
  const std::string op = ctx.node().opType();
  TESSEL_ASSIGN_OR_RETURN(int64_t numMelBins, scalarInt(ctx, 0, "num_mel_bins"));
  TESSEL_ASSIGN_OR_RETURN(int64_t dftLength, scalarInt(ctx, 1, "dft_length"));
  TESSEL_ASSIGN_OR_RETURN(int64_t sampleRate, scalarInt(ctx, 2, "sample_rate"));
  TESSEL_ASSIGN_OR_RETURN(DType dtype, outputDType(ctx));
  for (size_t i : {3, 4}) {
    if (!isFloatingPoint(ctx.tensor(i).dtype()) || ctx.tensor(i).numel() != 1) {
      return makeError(ErrorCode::InvalidArgument, "{}: input {} must be one floating-point value", op, i);
    }
  }
  const double lowerHz = ctx.tensor(3).scalarAsDouble(), upperHz = ctx.tensor(4).scalarAsDouble();
  if (numMelBins <= 0 || dftLength <= 0 || sampleRate <= 0) {
    return makeError(ErrorCode::InvalidArgument,
                     "{}: num_mel_bins {}, dft_length {} and sample_rate {} must be positive",
                     op, numMelBins, dftLength, sampleRate);
  }
  if (lowerHz < 0 || upperHz < lowerHz) {
    return makeError(ErrorCode::InvalidArgument, "{}: need 0 <= lower_edge_hertz ({}) <= upper_edge_hertz ({})", op,
                     lowerHz, upperHz);
  }

  const int64_t numSpectrogramBins = dftLength / 2 + 1;
  const double lowMel = hertzToMel(lowerHz);
  const double melStep = (hertzToMel(upperHz) - lowMel) / static_cast<double>(numMelBins + 2);
  std::vector<int64_t> edges(static_cast<size_t>(numMelBins + 2));
  for (int64_t i = 0; i < numMelBins + 2; ++i) {
    const double hz = melToHertz(lowMel + static_cast<double>(i) * melStep);
    edges[i] = static_cast<int64_t>(std::floor(static_cast<double>(dftLength + 1) * hz / sampleRate));
    if (edges[i] >= numSpectrogramBins) {
      return makeError(ErrorCode::InvalidArgument, "{}: upper_edge_hertz {} maps past the last of {} spectrogram bins",
                       op, upperHz, numSpectrogramBins);
    }
  }

  std::vector<double> out(static_cast<size_t>(numSpectrogramBins * numMelBins), 0.0);
  auto at = [&](int64_t bin, int64_t mel) -> double & { return out[bin * numMelBins + mel]; };
  for (int64_t m = 0; m < numMelBins; ++m) {
    const int64_t left = edges[m], center = edges[m + 1], right = edges[m + 2];
    if (center == left) {
      at(center, m) = 1.0;
    } else {
      for (int64_t j = left; j <= center; ++j) at(j, m) = static_cast<double>(j - left) / (center - left);
    }
    for (int64_t j = center; j < right; ++j) at(j, m) = static_cast<double>(right - j) / (right - center);
  }
  ctx.setOutput(0, fromDoubles(dtype, {numSpectrogramBins, numMelBins}, out));
  return Status::success();
}

}  // namespace tessel::ref
