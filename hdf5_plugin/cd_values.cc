#include "hdf5_plugin/cd_values.h"

#include <bit>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ebzip::hdf5 {
namespace {

// HDF5's limits: a dataspace has at most 32 dimensions, and a chunk at most
// 2^32 - 1 bytes.
constexpr size_t kMaxChunkRank = 32;
constexpr uint64_t kMaxChunkBytes = 0xffffffffu;

double WordsToDouble(unsigned int low, unsigned int high) {
  return std::bit_cast<double>(uint64_t{low} | (uint64_t{high} << 32));
}

void AppendDouble(double v, std::vector<unsigned int>* words) {
  const uint64_t bits = std::bit_cast<uint64_t>(v);
  words->push_back(static_cast<unsigned int>(bits & 0xffffffffu));
  words->push_back(static_cast<unsigned int>(bits >> 32));
}

absl::Status Invalid(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("ebzip filter: ", what));
}

absl::Status CheckFill(DType dtype, double fill) {
  if (!std::isfinite(fill) ||
      (dtype == DType::kFloat32 && std::fabs(fill) > std::numeric_limits<float>::max())) {
    return Invalid(absl::StrCat("the fill value ", fill, " is not a finite ", DTypeName(dtype)));
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t FilterParams::chunk_elements() const {
  uint64_t n = 1;
  for (uint64_t d : chunk) n *= d;
  return n;
}

ArraySpec FilterParams::ChunkSpec() const {
  ArraySpec spec{dtype, {}};
  const size_t merged = chunk.size() > kMaxDims ? chunk.size() - kMaxDims + 1 : 1;
  uint64_t first = 1;
  for (size_t i = 0; i < merged; ++i) first *= chunk[i];
  spec.shape.push_back(first);
  for (size_t i = merged; i < chunk.size(); ++i) spec.shape.push_back(chunk[i]);
  return spec;
}

absl::StatusOr<UserParams> ParseUserWords(absl::Span<const unsigned int> cd) {
  if (cd.size() < kUserWords) {
    return Invalid(absl::StrCat("expected at least ", kUserWords, " cd_values, got ", cd.size(),
                                "; ebzip.hdf5.Ebzip in Python gives them (docs/python.md, HDF5)"));
  }
  if (cd[0] != kLayoutVersion) {
    return Invalid(absl::StrCat("cd_values layout ", cd[0], " is not one this plugin reads (",
                                kLayoutVersion, "); a newer ebzip may have written it"));
  }
  UserParams p;
  if (cd[2] == static_cast<unsigned int>(BoundMode::kAbs)) {
    p.mode = BoundMode::kAbs;
  } else if (cd[2] == static_cast<unsigned int>(BoundMode::kRel)) {
    p.mode = BoundMode::kRel;
  } else {
    return Invalid(absl::StrCat("bound mode ", cd[2], " is neither 1 (ABS) nor 2 (REL)"));
  }
  p.bound = WordsToDouble(cd[3], cd[4]);
  if (!(std::isfinite(p.bound) && p.bound > 0)) {
    return Invalid(absl::StrCat("the bound must be a positive finite number, got ", p.bound));
  }
  p.fill_flag = cd[5];
  if (p.fill_flag > kFillNone) {
    return Invalid(absl::StrCat("fill flag ", cd[5], " is not 0, 1 or 2"));
  }
  p.fill_value = WordsToDouble(cd[6], cd[7]);
  if (p.fill_flag == kFillGiven) {
    if (!std::isfinite(p.fill_value)) {
      return Invalid(absl::StrCat("the fill value must be finite, got ", p.fill_value));
    }
  } else if (cd[6] != 0 || cd[7] != 0) {
    return Invalid("a fill value without the flag that gives one");
  }
  return p;
}

absl::StatusOr<std::vector<unsigned int>> CompleteWords(const UserParams& user, DType dtype,
                                                        absl::Span<const uint64_t> chunk,
                                                        std::optional<double> dataset_fill) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) return Invalid("unknown dtype");
  if (chunk.empty() || chunk.size() > kMaxChunkRank) {
    return Invalid(absl::StrCat("a chunk of rank ", chunk.size()));
  }
  uint64_t bytes = DTypeSize(dtype);
  for (uint64_t d : chunk) {
    if (d == 0 || d > kMaxChunkBytes || bytes > kMaxChunkBytes / d) {
      return Invalid(absl::StrCat("chunk ", ShapeToString(chunk), " of ", DTypeName(dtype),
                                  " is empty or over HDF5's 4 GiB"));
    }
    bytes *= d;
  }
  std::optional<double> fill;
  if (user.fill_flag == kFillGiven) {
    fill = user.fill_value;
  } else if (user.fill_flag == kFillFromDataset && dataset_fill.has_value() &&
             std::isfinite(*dataset_fill)) {
    fill = dataset_fill;
  }
  if (fill.has_value()) {
    if (auto s = CheckFill(dtype, *fill); !s.ok()) return s;
  }
  std::vector<unsigned int> words = {kLayoutVersion, static_cast<unsigned int>(dtype),
                                     static_cast<unsigned int>(user.mode)};
  AppendDouble(user.bound, &words);
  words.push_back(fill.has_value() ? kFillGiven : kFillNone);
  AppendDouble(fill.value_or(0.0), &words);
  words.push_back(static_cast<unsigned int>(chunk.size()));
  for (uint64_t d : chunk) words.push_back(static_cast<unsigned int>(d));
  return words;
}

absl::StatusOr<FilterParams> ParseWords(absl::Span<const unsigned int> cd) {
  auto user = ParseUserWords(cd);
  if (!user.ok()) return user.status();
  if (cd.size() < kUserWords + 1 || cd[kUserWords] == 0 ||
      cd.size() != kUserWords + 1 + cd[kUserWords]) {
    return Invalid("cd_values without the chunk shape set_local writes");
  }
  if (user->fill_flag == kFillFromDataset) return Invalid("fill flag 0 left unresolved");
  FilterParams p;
  if (cd[1] == static_cast<unsigned int>(DType::kFloat32)) {
    p.dtype = DType::kFloat32;
  } else if (cd[1] == static_cast<unsigned int>(DType::kFloat64)) {
    p.dtype = DType::kFloat64;
  } else {
    return Invalid(absl::StrCat("dtype ", cd[1], " is neither 1 (float32) nor 2 (float64)"));
  }
  p.mode = user->mode;
  p.bound = user->bound;
  if (user->fill_flag == kFillGiven) p.fill_value = user->fill_value;
  p.chunk.assign(cd.begin() + kUserWords + 1, cd.end());
  // The same checks set_local made, so that a file's words are trusted no
  // more than a user's.
  auto again = CompleteWords(*user, p.dtype, p.chunk, std::nullopt);
  if (!again.ok()) return again.status();
  return p;
}

}  // namespace ebzip::hdf5
