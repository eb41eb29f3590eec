// A version-2 archive can describe some 2^19 times its size (FORMAT.md §9,
// §15.8.1: up to 8192 positions per bit with run-value tokens):
// when the output cannot be allocated, Decompress reports it instead of
// crashing. The address space is capped in a child process (a death test's
// fork), so the allocation fails there for real.
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/format.h"
#include "gtest/gtest.h"

namespace ebzip {
namespace {

// Decompress of `archive`, in a child whose address space has no room for
// its output, is RESOURCE_EXHAUSTED.
void ExpectResourceExhausted(const std::vector<uint8_t>& archive) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        // Room for the process as it is, not for another 256 MiB.
        rlimit limit;
        getrlimit(RLIMIT_AS, &limit);
        std::FILE* f = std::fopen("/proc/self/statm", "r");
        unsigned long pages = 0;
        if (f == nullptr || std::fscanf(f, "%lu", &pages) != 1) std::_Exit(3);
        std::fclose(f);
        limit.rlim_cur = pages * 4096 + (uint64_t{64} << 20);
        if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(4);
        auto out = Decompress(archive);
        std::_Exit(out.status().code() == absl::StatusCode::kResourceExhausted ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(AllocationDeathTest, AnOutputThatCannotBeAllocatedIsResourceExhausted) {
  // 256 MiB of one value: a few hundred bytes of run tokens.
  const ArraySpec spec{DType::kFloat64, {uint64_t{1} << 25}};
  const std::vector<uint8_t> data(spec.num_bytes(), 0);
  CompressOptions options;
  options.bound = 1e-3;
  options.lossless = Lossless::kZeroRuns;
  auto archive = Compress(spec, data, options);
  ASSERT_TRUE(archive.ok()) << archive.status();
  ASSERT_LT(archive->size(), spec.num_bytes() / 10000);
  ExpectResourceExhausted(*archive);
}

// The same with run-value tokens (FORMAT.md §15.4.1), which cover up to 8192
// positions each: zeros with one quantization step at every 8192nd element,
// so that, with the Lorenzo predictor, each 8191 zeros and the +1 after
// them are one token of class 12.
TEST(AllocationDeathTest, RunValueTokensThatCannotBeAllocatedAreResourceExhausted) {
  const ArraySpec spec{DType::kFloat64, {uint64_t{1} << 25}};
  std::vector<uint8_t> data(spec.num_bytes(), 0);
  CompressOptions options;
  options.bound = 1e-3;
  options.predictor = Predictor::kLorenzo;
  options.lossless = Lossless::kRunValues;
  const double step = 2 * options.bound;
  for (uint64_t i = 8191; i < spec.num_elements(); i += 8192) StoreLE<double>(&data[8 * i], step);
  auto archive = Compress(spec, data, options);
  ASSERT_TRUE(archive.ok()) << archive.status();
  ASSERT_LT(archive->size(), spec.num_bytes() / 10000);
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok()) << info.status();
  for (const format::FrameHeader& h : info->frame_headers) {
    EXPECT_EQ(h.lossless, format::kLosslessRunValues);
    // Near the most positions per bit that §15.8.1 allows: a chunk of 16384
    // positions is two tokens of 8192 (a short codeword and 12 extra bits
    // each) in one 32-bit word, 512 positions a bit.
    EXPECT_LT(h.sections[format::kBitstream].length * 8, h.positions / 500);
  }
  ExpectResourceExhausted(*archive);
}

}  // namespace
}  // namespace ebzip
