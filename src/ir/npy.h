// Reading and writing tensors as NumPy .npy files (format versions 1.0-3.0, little-endian,
// C order), the exchange format of `tessel run`.
#pragma once

#include <string>

#include "ir/tensor.h"
#include "support/diagnostic.h"

namespace tessel {

/// Reads a .npy file. Fails with the file name on unsupported dtypes, Fortran order or truncation.
Expected<Tensor> readNpy(const std::string &path);
/// Parses .npy bytes; `path` names them in diagnostics.
Expected<Tensor> parseNpy(const std::string &bytes, const std::string &path);
/// Writes a .npy file (version 1.0). bf16 and fp8 tensors, which NumPy lacks, are written as f32.
Status writeNpy(const std::string &path, const Tensor &tensor);
/// Serializes to .npy bytes.
Expected<std::string> serializeNpy(const Tensor &tensor);
/// The file a value is read from or written to in a folder of .npy files (`tessel run --output-dir`,
/// `tessel bench --inputs`, `tessel quantize --calibration`): NAME.npy, with characters a file name
/// should not hold replaced by '_'.
std::string npyFileName(const std::string &valueName);

}  // namespace tessel
