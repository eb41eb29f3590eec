// The filter's cd_values layout (hdf5_plugin/cd_values.h) without HDF5:
// what set_local writes from a user's words, and what the filter accepts.
#include "hdf5_plugin/cd_values.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ebzip::hdf5 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A double's two words, low first, computed here from its bytes.
std::vector<unsigned int> Words(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return {static_cast<unsigned int>(bits), static_cast<unsigned int>(bits >> 32)};
}

std::vector<unsigned int> User(unsigned int mode, double bound, unsigned int fill_flag = 0,
                               double fill = 0) {
  std::vector<unsigned int> w = {1, 0, mode};
  for (unsigned int x : Words(bound)) w.push_back(x);
  w.push_back(fill_flag);
  for (unsigned int x : Words(fill)) w.push_back(x);
  return w;
}

TEST(CdValuesTest, SetLocalCompletesTheUserWords) {
  auto user = ParseUserWords(User(2, 1e-4));
  ASSERT_TRUE(user.ok()) << user.status();
  const std::vector<uint64_t> chunk = {5, 90, 180};
  auto words = CompleteWords(*user, DType::kFloat32, chunk, std::nullopt);
  ASSERT_TRUE(words.ok()) << words.status();
  const std::vector<unsigned int> b = Words(1e-4);
  EXPECT_THAT(*words, ElementsAre(1, 1, 2, b[0], b[1], kFillNone, 0, 0, 3, 5, 90, 180));

  auto params = ParseWords(*words);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->dtype, DType::kFloat32);
  EXPECT_EQ(params->mode, BoundMode::kRel);
  EXPECT_EQ(params->bound, 1e-4);
  EXPECT_FALSE(params->fill_value.has_value());
  EXPECT_THAT(params->chunk, ElementsAre(5, 90, 180));
  EXPECT_EQ(params->chunk_elements(), 5u * 90 * 180);
  EXPECT_THAT(params->ChunkSpec().shape, ElementsAre(5, 90, 180));
}

TEST(CdValuesTest, FillValueFromTheUserOrTheDataset) {
  const std::vector<uint64_t> chunk = {10};
  auto from_dataset = CompleteWords(*ParseUserWords(User(1, 0.5)), DType::kFloat64, chunk, -1e10);
  ASSERT_TRUE(from_dataset.ok());
  EXPECT_EQ(ParseWords(*from_dataset)->fill_value, -1e10);

  // The user's value wins; flag 2 says none whatever the dataset has.
  auto given = CompleteWords(*ParseUserWords(User(1, 0.5, 1, 7.25)), DType::kFloat64, chunk, -1e10);
  EXPECT_EQ(ParseWords(*given)->fill_value, 7.25);
  auto none = CompleteWords(*ParseUserWords(User(1, 0.5, 2)), DType::kFloat64, chunk, -1e10);
  EXPECT_FALSE(ParseWords(*none)->fill_value.has_value());

  // A NaN or infinite dataset fill is no fill value (they come back exactly).
  for (double nonfinite : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    auto words = CompleteWords(*ParseUserWords(User(1, 0.5)), DType::kFloat64, chunk, nonfinite);
    ASSERT_TRUE(words.ok());
    EXPECT_FALSE(ParseWords(*words)->fill_value.has_value());
  }
  // float32 cannot hold 1e39.
  auto too_big =
      CompleteWords(*ParseUserWords(User(1, 0.5, 1, 1e39)), DType::kFloat32, chunk, std::nullopt);
  EXPECT_THAT(too_big.status().message(), HasSubstr("not a finite f32"));
}

TEST(CdValuesTest, MoreThanFourDimensionsMergeTheLeadingOnes) {
  auto words = CompleteWords(*ParseUserWords(User(1, 1.0)), DType::kFloat64,
                             std::vector<uint64_t>{2, 3, 4, 5, 6, 7}, std::nullopt);
  ASSERT_TRUE(words.ok());
  const ArraySpec spec = ParseWords(*words)->ChunkSpec();
  EXPECT_EQ(spec.dtype, DType::kFloat64);
  EXPECT_THAT(spec.shape, ElementsAre(2 * 3 * 4, 5, 6, 7));
}

TEST(CdValuesTest, RefusesBadUserWords) {
  struct Case {
    std::vector<unsigned int> words;
    const char* message;
  };
  std::vector<unsigned int> v2 = User(1, 1.0);
  v2[0] = 2;
  std::vector<unsigned int> short_words = User(1, 1.0);
  short_words.pop_back();
  std::vector<unsigned int> stray_fill = User(1, 1.0, 2, 3.0);
  const std::vector<Case> cases = {
      {v2, "layout 2"},
      {short_words, "at least 8"},
      {User(0, 1.0), "bound mode 0"},
      {User(3, 1.0), "bound mode 3"},
      {User(1, 0.0), "positive finite"},
      {User(2, -1e-3), "positive finite"},
      {User(1, std::nan("")), "positive finite"},
      {User(1, std::numeric_limits<double>::infinity()), "positive finite"},
      {User(1, 1.0, 3), "fill flag 3"},
      {User(1, 1.0, 1, std::nan("")), "fill value must be finite"},
      {stray_fill, "without the flag"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseUserWords(c.words);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.message));
  }
}

TEST(CdValuesTest, RefusesBadChunks) {
  const UserParams user = *ParseUserWords(User(1, 1.0));
  EXPECT_FALSE(CompleteWords(user, DType::kFloat32, {}, std::nullopt).ok());
  EXPECT_FALSE(
      CompleteWords(user, DType::kFloat32, std::vector<uint64_t>{4, 0, 4}, std::nullopt).ok());
  // 2^30 float32 elements are 4 GiB: one byte over HDF5's chunk limit.
  EXPECT_FALSE(
      CompleteWords(user, DType::kFloat32, std::vector<uint64_t>{1 << 15, 1 << 15}, std::nullopt)
          .ok());
  EXPECT_TRUE(CompleteWords(user, DType::kFloat32, std::vector<uint64_t>{1 << 15, (1 << 15) - 1},
                            std::nullopt)
                  .ok());
  EXPECT_FALSE(
      CompleteWords(user, DType::kFloat32, std::vector<uint64_t>(33, 1), std::nullopt).ok());
}

TEST(CdValuesTest, TheFilterRefusesWordsSetLocalWouldNotWrite) {
  const std::vector<unsigned int> good = *CompleteWords(
      *ParseUserWords(User(1, 1.0)), DType::kFloat64, std::vector<uint64_t>{8, 8}, std::nullopt);
  ASSERT_TRUE(ParseWords(good).ok());
  // The user's words alone, before set_local.
  EXPECT_FALSE(ParseWords(absl::MakeConstSpan(good).first(kUserWords)).ok());
  std::vector<unsigned int> w = good;
  w.push_back(8);  // one dimension more than the rank says
  EXPECT_FALSE(ParseWords(w).ok());
  w = good;
  w[kUserWords] = 3;  // a rank the words do not hold
  EXPECT_FALSE(ParseWords(w).ok());
  w = good;
  w[1] = 3;  // no such dtype
  EXPECT_THAT(ParseWords(w).status().message(), HasSubstr("dtype 3"));
  w = good;
  w[5] = kFillFromDataset;  // never resolved
  EXPECT_FALSE(ParseWords(w).ok());
  w = good;
  w[kUserWords + 1] = 0;  // an empty chunk
  EXPECT_FALSE(ParseWords(w).ok());
}

}  // namespace
}  // namespace ebzip::hdf5
