#include "client/io/variable_metadata.h"

#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ebzip {
namespace {

using Json = nlohmann::json;

VariableMetadata WithCoordinate(std::vector<double> values) {
  VariableMetadata m;
  m.name = "T";
  m.type = "float";
  m.dimensions = {"X"};
  m.coordinates.push_back({"X", "double", std::move(values), {{"units", "char", "m", {}, {}}}});
  return m;
}

// Bit for bit: -0.0 and 0.0 differ, NaN equals itself.
void ExpectSameBits(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(got[i]), std::bit_cast<uint64_t>(want[i]))
        << "value " << i << ": " << got[i] << " against " << want[i];
  }
}

std::vector<double> RoundTrip(const std::vector<double>& values, Json* entry) {
  const std::string doc = VariableMetadataToJson(WithCoordinate(values));
  *entry = Json::parse(doc)["coordinates"]["X"];
  absl::StatusOr<VariableMetadata> back = ParseVariableMetadata(doc);
  EXPECT_TRUE(back.ok()) << back.status();
  if (!back.ok() || back->coordinates.size() != 1) return {};
  EXPECT_EQ(back->coordinates[0].attributes.size(), 1u);
  return back->coordinates[0].values;
}

// A grid whose values a writer accumulated by another formula: etopo5's
// latitudes are -90 + i * (180 / 2160), which the first interval (rounded)
// does not reproduce but the span over the intervals does.
TEST(VariableMetadataTest, RegularCoordinatesAreStoredAsStartStepCount) {
  std::vector<double> lat(2161);
  for (size_t i = 0; i < lat.size(); ++i) lat[i] = -90.0 + static_cast<double>(i) * (180.0 / 2160);
  Json entry;
  ExpectSameBits(RoundTrip(lat, &entry), lat);
  EXPECT_FALSE(entry.contains("values")) << entry.dump();
  EXPECT_EQ(entry["start"].get<double>(), -90.0);
  EXPECT_EQ(entry["count"].get<uint64_t>(), 2161u);
  EXPECT_LT(entry.dump().size(), 200u);
}

TEST(VariableMetadataTest, IrregularOrSpecialCoordinatesKeepTheirValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::vector<double>> cases = {
      {0, 10, 20, 30, 50, 75},  // depth levels
      {-0.0, 1, 2, 3},          // -0.0 would come back as 0.0
      {0, 1, nan},              // NaN never equals a computed value
      {1, 2},                   // too short to gain anything
  };
  for (const std::vector<double>& values : cases) {
    Json entry;
    ExpectSameBits(RoundTrip(values, &entry), values);
    EXPECT_TRUE(entry.contains("values")) << entry.dump();
  }
}

// Whichever form a list of tenths takes, it comes back bit for bit: 0.3
// and 0.1 + 2 * 0.1 differ in their last bit.
TEST(VariableMetadataTest, RoundedGridsComeBackBitForBit) {
  for (const std::vector<double>& values :
       {std::vector<double>{0.1, 0.2, 0.3}, std::vector<double>{0.1, 0.2, 0.1 + 2 * 0.1},
        std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}}) {
    Json entry;
    ExpectSameBits(RoundTrip(values, &entry), values);
  }
}

absl::Status ParseCoordinate(const std::string& entry) {
  return ParseVariableMetadata(absl::StrCat(R"({"name":"T","coordinates":{"X":)", entry, "}}"))
      .status();
}

// Another writer's document: the regular form is checked before a value is
// computed, and the counts are capped together as lists' lengths are by the
// 1 MiB document.
TEST(VariableMetadataTest, MalformedRegularCoordinatesAreRejected) {
  EXPECT_TRUE(ParseCoordinate(R"({"type":"double","start":1,"step":0.5,"count":4})").ok());
  EXPECT_TRUE(ParseCoordinate(R"({"type":"double","start":1,"step":0.5,"count":524288})").ok());
  // Many coordinates, each under the cap, must not add up past it.
  std::string many = R"({"name":"T","coordinates":{)";
  for (int i = 0; i < 3; ++i) {
    absl::StrAppend(&many, i ? "," : "", "\"X", i,
                    R"(":{"type":"double","start":0,"step":1,"count":200000})");
  }
  many += "}}";
  EXPECT_EQ(ParseVariableMetadata(many).status().code(), absl::StatusCode::kInvalidArgument);
  for (const char* bad : {
           R"({"type":"double","start":1,"step":0.5,"count":524289})",
           R"({"type":"double","start":1,"step":0.5,"count":1000000000000})",
           R"({"type":"double","start":1,"step":0.5,"count":-4})",
           R"({"type":"double","start":1,"step":0.5,"count":4.5})",
           R"({"type":"double","start":"NaN","step":0.5,"count":4})",
           R"({"type":"double","start":1,"count":4})",
           R"({"type":"double"})",
       }) {
    const absl::Status s = ParseCoordinate(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad << ": " << s;
  }
}

}  // namespace
}  // namespace ebzip
