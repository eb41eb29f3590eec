// A version-2 archive can describe some 2^19 times its size (FORMAT.md §9):
// when the output cannot be allocated, Decompress reports it instead of
// crashing. The address space is capped in a child process (a death test's
// fork), so the allocation fails there for real.
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "codec/archive.h"
#include "gtest/gtest.h"

namespace ebzip {
namespace {

TEST(AllocationDeathTest, AnOutputThatCannotBeAllocatedIsResourceExhausted) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // 256 MiB of one value: a few hundred bytes of run tokens.
  const ArraySpec spec{DType::kFloat64, {uint64_t{1} << 25}};
  const std::vector<uint8_t> data(spec.num_bytes(), 0);
  CompressOptions options;
  options.bound = 1e-3;
  options.lossless = Lossless::kZeroRuns;
  auto archive = Compress(spec, data, options);
  ASSERT_TRUE(archive.ok()) << archive.status();
  ASSERT_LT(archive->size(), spec.num_bytes() / 10000);
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
        auto out = Decompress(*archive);
        std::_Exit(out.status().code() == absl::StatusCode::kResourceExhausted ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace ebzip
