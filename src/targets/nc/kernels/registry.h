// The kernel library: every family's KernelDefs in one list, lookup by name, and parsing of the
// `--shape`, `--dtype` and `--option` texts of `tessel kernel run` into KernelParams.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// All library kernels, family by family (elementwise, softmax, norm, reduction, transpose, matmul,
/// attention, mamba); names are unique.
const std::vector<KernelDef> &kernelLibrary();

/// The kernel named `name`, or null.
const KernelDef *findKernel(std::string_view name);

/// Parses "R=256,C=512" (every dim of `kernel` given or defaulted, no others), a dtype name the
/// kernel accepts ("" = its first), "key=value" options and a variant name ("" = its first). Errors
/// name the kernel and the text: unknown or repeated dim, missing dim, a size that is not a positive
/// integer, a dtype the kernel does not accept, an option that is not key=value, an unknown variant.
Expected<KernelParams> parseKernelParams(const KernelDef &kernel, std::string_view shapeText,
                                         std::string_view dtypeText, const std::vector<std::string> &optionTexts,
                                         std::string_view variantText = "");

/// "R=256,C=512" in the kernel's dim order.
std::string formatDims(const KernelDef &kernel, const KernelParams &params);

}  // namespace tessel::nc::kernels
