// Vocabulary shared by every layer: element types, bound modes and array
// shapes. The numeric values of the enums are the ones written into archives
// (FORMAT.md) and match proto/ebzip/v1/ebzip.proto.
#ifndef EBZIP_CODEC_TYPES_H_
#define EBZIP_CODEC_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace ebzip {

enum class DType : uint8_t { kFloat32 = 1, kFloat64 = 2 };
enum class BoundMode : uint8_t { kAbs = 1, kRel = 2 };

inline constexpr int kMaxDims = 4;

// Bytes per element; 0 for a value that is not a DType.
size_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);
const char* BoundModeName(BoundMode mode);

// A dense array in C order (slowest dimension first).
struct ArraySpec {
  DType dtype = DType::kFloat32;
  std::vector<uint64_t> shape;

  // Product of the dimensions; 0 when the shape is empty.
  uint64_t num_elements() const;
  uint64_t num_bytes() const { return num_elements() * DTypeSize(dtype); }
};

// Checks dtype, 1 <= rank <= kMaxDims, every dimension >= 1, and that the
// byte count does not overflow 64 bits.
absl::Status ValidateArraySpec(const ArraySpec& spec);

// "2161x4320" style rendering for messages.
std::string ShapeToString(absl::Span<const uint64_t> shape);

}  // namespace ebzip

#endif  // EBZIP_CODEC_TYPES_H_
