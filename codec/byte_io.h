// Little-endian encoding of fixed-width fields. Archives are little-endian
// (FORMAT.md); hosts are too, which the static_assert pins down so a port to
// a big-endian machine fails to build instead of writing wrong bytes.
#ifndef EBZIP_CODEC_BYTE_IO_H_
#define EBZIP_CODEC_BYTE_IO_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/types/span.h"

namespace ebzip {

static_assert(std::endian::native == std::endian::little, "ebzip assumes a little-endian host");

template <typename T>
inline void StoreLE(uint8_t* dst, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::memcpy(dst, &value, sizeof(T));
}

template <typename T>
inline T LoadLE(const uint8_t* src) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, src, sizeof(T));
  return value;
}

// Appends fields to a growing byte vector.
class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>* out) : out_(out) {}

  template <typename T>
  void Put(T value) {
    size_t at = out_->size();
    out_->resize(at + sizeof(T));
    StoreLE(out_->data() + at, value);
  }
  void PutBytes(absl::Span<const uint8_t> bytes) {
    out_->insert(out_->end(), bytes.begin(), bytes.end());
  }
  void PutZeros(size_t n) { out_->resize(out_->size() + n, 0); }
  // Zero-pads to a multiple of `alignment` bytes.
  void Align(size_t alignment) {
    size_t rem = out_->size() % alignment;
    if (rem != 0) PutZeros(alignment - rem);
  }
  size_t size() const { return out_->size(); }

 private:
  std::vector<uint8_t>* out_;
};

// Reads fields from a byte span; every read is bounds-checked and a failed
// read leaves the reader in a failed state that the caller checks once.
class ByteReader {
 public:
  explicit ByteReader(absl::Span<const uint8_t> in) : in_(in) {}

  template <typename T>
  T Get() {
    if (!ok_ || in_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return T{};
    }
    T v = LoadLE<T>(in_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }
  absl::Span<const uint8_t> GetBytes(size_t n) {
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    auto s = in_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  void Skip(size_t n) { GetBytes(n); }
  bool ok() const { return ok_; }
  size_t position() const { return pos_; }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  absl::Span<const uint8_t> in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

inline constexpr uint64_t AlignUp(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace ebzip

#endif  // EBZIP_CODEC_BYTE_IO_H_
