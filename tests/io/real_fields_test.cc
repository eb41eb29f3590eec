#include "tests/real_fields.h"

#include <netcdf.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "tests/io/io_test_util.h"

namespace ebzip {
namespace {

// The shape as the file's own dimensions give it, read without client/io.
std::vector<uint64_t> ShapeFromFile(const std::string& path, const std::string& variable) {
  std::vector<uint64_t> shape;
  int ncid = -1, varid = -1, ndims = 0;
  if (nc_open(path.c_str(), NC_NOWRITE, &ncid) != NC_NOERR) return shape;
  int dimids[NC_MAX_VAR_DIMS];
  if (nc_inq_varid(ncid, variable.c_str(), &varid) == NC_NOERR &&
      nc_inq_varndims(ncid, varid, &ndims) == NC_NOERR &&
      nc_inq_vardimid(ncid, varid, dimids) == NC_NOERR) {
    for (int i = 0; i < ndims; ++i) {
      size_t len = 0;
      nc_inq_dimlen(ncid, dimids[i], &len);
      shape.push_back(len);
    }
  }
  nc_close(ncid);
  return shape;
}

struct Expected {
  std::vector<uint64_t> shape;
  float fill;
  bool has_fill_points;
};

// What ncdump -h and ncdump -v say about the Debian files.
Expected ExpectedFor(const std::string& name) {
  if (name == "etopo5") return {{2161, 4320}, -1e34f, false};
  if (name == "temp") return {{12, 19, 90, 180}, -1e34f, true};
  if (name == "uwnd") return {{132, 73, 144}, -99.9f, false};
  if (name == "salt") return {{20, 180, 360}, -1e10f, true};
  if (name == "etopo20") return {{540, 1081}, -1e34f, false};
  return {};
}

TEST(RealFieldsTest, RegistryHasTheAgreedFields) {
  std::vector<std::string> names;
  for (const RealField& field : RealFields()) names.push_back(field.name);
  EXPECT_EQ(names, (std::vector<std::string>{"etopo5", "temp", "uwnd", "salt", "etopo20"}));
}

TEST(RealFieldsTest, EachLoadsAsFloat32WithTheFileShapeAndFill) {
  for (const RealField& field : RealFields()) {
    SCOPED_TRACE(field.name);
    ASSERT_LOAD_REAL_FIELD(loaded, field.name);
    const Expected expected = ExpectedFor(field.name);
    EXPECT_EQ(loaded.spec.dtype, DType::kFloat32);
    EXPECT_EQ(loaded.spec.shape, ShapeFromFile(RealFieldPath(field), field.variable));
    EXPECT_EQ(loaded.spec.shape, expected.shape);
    ASSERT_EQ(loaded.data.size(), loaded.spec.num_bytes());
    ASSERT_TRUE(loaded.fill_value.has_value());
    EXPECT_EQ(*loaded.fill_value, static_cast<double>(expected.fill));

    size_t fills = 0, non_finite = 0;
    for (float v : ValuesOf<float>(loaded.data)) {
      fills += v == expected.fill;
      non_finite += !std::isfinite(v);
    }
    EXPECT_EQ(fills > 0, expected.has_fill_points) << fills << " fill points";
    EXPECT_EQ(non_finite, 0u);
  }
}

TEST(RealFieldsTest, UnknownNameIsNotFound) {
  EXPECT_TRUE(
      HasStatus(LoadRealField("nope").status(), absl::StatusCode::kNotFound, {"nope", "etopo20"}));
  EXPECT_FATAL_FAILURE(
      {
        LoadedArray unused;
        LoadRealFieldOrFail("nope", &unused);
      },
      "no real field named nope");
}

class MissingFerretDataTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("EBZIP_FERRET_DATA", "/nonexistent/ferret", 1); }
  void TearDown() override { unsetenv("EBZIP_FERRET_DATA"); }
};

TEST_F(MissingFerretDataTest, SaysHowToInstall) {
  EXPECT_EQ(FerretDataDir(), "/nonexistent/ferret");
  EXPECT_TRUE(HasStatus(LoadRealField("etopo20").status(), absl::StatusCode::kNotFound,
                        {"ferret-datasets not installed: run scripts/install_deps.sh",
                         "/nonexistent/ferret/etopo20.cdf"}));
  EXPECT_FATAL_FAILURE(
      {
        LoadedArray unused;
        LoadRealFieldOrFail("etopo20", &unused);
      },
      "ferret-datasets not installed");
}

}  // namespace
}  // namespace ebzip
