#include "client/io/netcdf_file.h"

#include <netcdf.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/io/io_test_util.h"

namespace ebzip {
namespace {

VariableToWrite Floats(std::vector<uint64_t> shape, std::vector<double> values) {
  VariableToWrite var;
  var.type = StoredType::kFloat32;
  var.shape = std::move(shape);
  var.values = std::move(values);
  return var;
}

TEST(NetcdfFileTest, FloatRoundTripsExactlyWithFillAndUnits) {
  ScratchDir dir;
  const std::string path = dir.File("f.nc");
  VariableToWrite var = Floats({2, 3}, {1.5, -2.25, 1e30, -1e34, 0.0, 3.0e-38});
  var.fill_value = -1e34;
  var.units = "K";
  ASSERT_TRUE(SaveNetcdfVariable(path, "T", var).ok());

  absl::StatusOr<LoadedArray> loaded = LoadNetcdfVariable(path, "T");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->spec.dtype, DType::kFloat32);
  EXPECT_EQ(loaded->spec.shape, (std::vector<uint64_t>{2, 3}));
  ASSERT_EQ(loaded->data.size(), 6 * sizeof(float));
  const std::vector<float> got = ValuesOf<float>(loaded->data);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<float>(var.values[i]));
  ASSERT_TRUE(loaded->fill_value.has_value());
  EXPECT_EQ(*loaded->fill_value, static_cast<double>(-1e34f));
  EXPECT_EQ(static_cast<float>(*loaded->fill_value), got[3]);
  EXPECT_EQ(loaded->description, "f.nc:T (float, 2x3, units=K)");
}

TEST(NetcdfFileTest, DoubleIn64BitOffsetFileRoundTripsExactly) {
  ScratchDir dir;
  const std::string path = dir.File("d.nc");
  VariableToWrite var;
  var.type = StoredType::kFloat64;
  var.shape = {2, 2, 2};
  var.values = {0.1,
                -0.2,
                1e300,
                -1e-300,
                std::numbers::pi,
                std::nan(""),
                std::numeric_limits<double>::infinity(),
                -0.0};
  ASSERT_TRUE(SaveNetcdfVariable(path, "D", var, {.format = NetcdfFormat::k64BitOffset}).ok());

  absl::StatusOr<LoadedArray> loaded = LoadNetcdfVariable(path, "D");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->spec.dtype, DType::kFloat64);
  EXPECT_EQ(loaded->spec.shape, (std::vector<uint64_t>{2, 2, 2}));
  EXPECT_FALSE(loaded->fill_value.has_value());
  const std::vector<double> got = ValuesOf<double>(loaded->data);
  ASSERT_EQ(got.size(), 8u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::memcmp(&got[i], &var.values[i], sizeof(double)), 0) << i;
  }
}

TEST(NetcdfFileTest, PackedShortIsUnpackedToFloat) {
  ScratchDir dir;
  const std::string path = dir.File("s.nc");
  VariableToWrite var;
  var.type = StoredType::kInt16;
  var.shape = {5};
  var.values = {-32767, -1, 0, 1234, -32768};
  var.scale_factor = 0.01;
  var.add_offset = 273.15;
  var.fill_value = -32768;
  var.units = "K";
  ASSERT_TRUE(SaveNetcdfVariable(path, "T", var).ok());

  absl::StatusOr<LoadedArray> loaded = LoadNetcdfVariable(path, "T");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->spec.dtype, DType::kFloat32);
  const std::vector<float> got = ValuesOf<float>(loaded->data);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], static_cast<float>(var.values[i] * 0.01 + 273.15)) << i;
  }
  ASSERT_TRUE(loaded->fill_value.has_value());
  EXPECT_EQ(*loaded->fill_value, static_cast<double>(static_cast<float>(-32768 * 0.01 + 273.15)));
  EXPECT_EQ(static_cast<float>(*loaded->fill_value), got[4]);
  EXPECT_EQ(loaded->description,
            "s.nc:T (short unpacked to float with scale_factor=0.01 add_offset=273.15, 5, "
            "units=K)");
}

TEST(NetcdfFileTest, UnpackedIntegersBecomeFloat) {
  ScratchDir dir;
  const std::string path = dir.File("b.nc");
  VariableToWrite var;
  var.type = StoredType::kInt8;
  var.shape = {2, 2};
  var.values = {-128, 127, 0, 5};
  var.missing_value = -128;
  ASSERT_TRUE(SaveNetcdfVariable(path, "B", var).ok());

  absl::StatusOr<LoadedArray> loaded = LoadNetcdfVariable(path, "B");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->spec.dtype, DType::kFloat32);
  EXPECT_EQ(ValuesOf<float>(loaded->data), (std::vector<float>{-128, 127, 0, 5}));
  EXPECT_EQ(loaded->fill_value, -128.0);
  EXPECT_EQ(loaded->description, "b.nc:B (byte unpacked to float, 2x2)");
}

// CF allows packing floats too; the unpacked values keep the stored type.
TEST(NetcdfFileTest, PackedFloatIsUnpackedInPlace) {
  ScratchDir dir;
  const std::string path = dir.File("pf.nc");
  VariableToWrite var = Floats({3}, {1.5, -4, 1e20});
  var.scale_factor = 2;
  var.add_offset = 0.25;
  var.fill_value = 1e20;
  ASSERT_TRUE(SaveNetcdfVariable(path, "T", var).ok());
  absl::StatusOr<LoadedArray> loaded = LoadNetcdfVariable(path, "T");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->spec.dtype, DType::kFloat32);
  const float fill = static_cast<float>(static_cast<double>(1e20f) * 2 + 0.25);
  EXPECT_EQ(ValuesOf<float>(loaded->data), (std::vector<float>{3.25f, -7.75f, fill}));
  EXPECT_EQ(loaded->fill_value, static_cast<double>(fill));
  EXPECT_EQ(loaded->description, "pf.nc:T (float unpacked with scale_factor=2 add_offset=0.25, 3)");
}

TEST(NetcdfFileTest, FillValuePrecedesMissingValue) {
  ScratchDir dir;
  const std::string path = dir.File("fm.nc");
  VariableToWrite var = Floats({2}, {1, 2});
  var.fill_value = -9;
  var.missing_value = -8;
  ASSERT_TRUE(SaveNetcdfVariable(path, "T", var).ok());
  absl::StatusOr<LoadedArray> loaded = LoadNetcdfVariable(path, "T");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->fill_value, -9.0);
}

TEST(NetcdfFileTest, RecordDimensionLoadsWithItsRecordCount) {
  ScratchDir dir;
  const std::string path = dir.File("r.nc");
  VariableToWrite var = Floats({3, 2}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(SaveNetcdfVariable(path, "T", var, {.unlimited_first_dim = true}).ok());
  absl::StatusOr<LoadedArray> loaded = LoadNetcdfVariable(path, "T");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->spec.shape, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(ValuesOf<float>(loaded->data), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(NetcdfFileTest, Netcdf4GroupsResolve) {
  ScratchDir dir;
  const std::string path = dir.File("g.nc");
  ASSERT_TRUE(
      SaveNetcdfVariable(path, "ocean/T", Floats({2}, {7, 8}), {.format = NetcdfFormat::kNetcdf4})
          .ok());
  for (const char* name : {"ocean/T", "/ocean/T"}) {
    absl::StatusOr<LoadedArray> loaded = LoadNetcdfVariable(path, name);
    ASSERT_TRUE(loaded.ok()) << name << ": " << loaded.status();
    EXPECT_EQ(ValuesOf<float>(loaded->data), (std::vector<float>{7, 8}));
  }
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(path, "land/T").status(), absl::StatusCode::kNotFound,
                        {"g.nc", "/land"}));
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(path, "ocean/S").status(), absl::StatusCode::kNotFound,
                        {"g.nc", "S", "variables: T"}));
}

TEST(NetcdfFileTest, GroupsNeedNetcdf4) {
  ScratchDir dir;
  EXPECT_TRUE(HasStatus(SaveNetcdfVariable(dir.File("x.nc"), "g/T", Floats({1}, {1})),
                        absl::StatusCode::kInvalidArgument, {"netCDF-4"}));
}

TEST(NetcdfFileTest, MissingFileIsNotFound) {
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable("/nonexistent/x.nc", "T").status(),
                        absl::StatusCode::kNotFound, {"/nonexistent/x.nc"}));
}

TEST(NetcdfFileTest, MissingVariableListsTheVariables) {
  ScratchDir dir;
  const std::string path = dir.File("m.nc");
  ASSERT_TRUE(SaveNetcdfVariable(path, "TEMP", Floats({1}, {1})).ok());
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(path, "SALT").status(), absl::StatusCode::kNotFound,
                        {path, "SALT", "variables: TEMP"}));
}

TEST(NetcdfFileTest, ScalarAndRankFiveAreRejected) {
  ScratchDir dir;
  const std::string scalar = dir.File("scalar.nc");
  ASSERT_TRUE(SaveNetcdfVariable(scalar, "S", Floats({}, {1})).ok());
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(scalar, "S").status(),
                        absl::StatusCode::kInvalidArgument, {"scalar.nc:S", "scalar"}));
  const std::string rank5 = dir.File("rank5.nc");
  ASSERT_TRUE(SaveNetcdfVariable(rank5, "R", Floats({1, 2, 1, 2, 1}, {1, 2, 3, 4})).ok());
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(rank5, "R").status(), absl::StatusCode::kInvalidArgument,
                        {"rank5.nc:R", "rank 5"}));
}

TEST(NetcdfFileTest, EmptyRecordDimensionIsRejected) {
  ScratchDir dir;
  const std::string path = dir.File("empty.nc");
  int ncid = -1, dims[2], varid = -1;
  ASSERT_EQ(nc_create(path.c_str(), NC_CLOBBER, &ncid), NC_NOERR);
  ASSERT_EQ(nc_def_dim(ncid, "time", NC_UNLIMITED, &dims[0]), NC_NOERR);
  ASSERT_EQ(nc_def_dim(ncid, "x", 4, &dims[1]), NC_NOERR);
  ASSERT_EQ(nc_def_var(ncid, "T", NC_FLOAT, 2, dims, &varid), NC_NOERR);
  ASSERT_EQ(nc_close(ncid), NC_NOERR);
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(path, "T").status(), absl::StatusCode::kInvalidArgument,
                        {"empty.nc:T", "zero dimension"}));
}

// Types the writer has no StoredType for, built with the C API.
TEST(NetcdfFileTest, NonNumericAndWideTypesAreRejected) {
  ScratchDir dir;
  const std::string path = dir.File("types.nc");
  int ncid = -1, dim = -1, varid = -1, compound = -1;
  ASSERT_EQ(nc_create(path.c_str(), NC_CLOBBER | NC_NETCDF4, &ncid), NC_NOERR);
  ASSERT_EQ(nc_def_dim(ncid, "x", 3, &dim), NC_NOERR);
  ASSERT_EQ(nc_def_var(ncid, "C", NC_CHAR, 1, &dim, &varid), NC_NOERR);
  ASSERT_EQ(nc_def_var(ncid, "S", NC_STRING, 1, &dim, &varid), NC_NOERR);
  ASSERT_EQ(nc_def_var(ncid, "L", NC_INT64, 1, &dim, &varid), NC_NOERR);
  ASSERT_EQ(nc_def_compound(ncid, 8, "pair", &compound), NC_NOERR);
  ASSERT_EQ(nc_insert_compound(ncid, compound, "a", 0, NC_FLOAT), NC_NOERR);
  ASSERT_EQ(nc_insert_compound(ncid, compound, "b", 4, NC_FLOAT), NC_NOERR);
  ASSERT_EQ(nc_def_var(ncid, "P", compound, 1, &dim, &varid), NC_NOERR);
  ASSERT_EQ(nc_close(ncid), NC_NOERR);

  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(path, "C").status(), absl::StatusCode::kInvalidArgument,
                        {"types.nc:C", "char"}));
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(path, "S").status(), absl::StatusCode::kInvalidArgument,
                        {"types.nc:S", "string"}));
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(path, "L").status(), absl::StatusCode::kInvalidArgument,
                        {"types.nc:L", "int64"}));
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(path, "P").status(), absl::StatusCode::kInvalidArgument,
                        {"types.nc:P", "pair"}));
}

TEST(NetcdfFileTest, NonNumericScaleFactorIsRejected) {
  ScratchDir dir;
  const std::string path = dir.File("bad_scale.nc");
  int ncid = -1, dim = -1, varid = -1;
  ASSERT_EQ(nc_create(path.c_str(), NC_CLOBBER, &ncid), NC_NOERR);
  ASSERT_EQ(nc_def_dim(ncid, "x", 1, &dim), NC_NOERR);
  ASSERT_EQ(nc_def_var(ncid, "T", NC_SHORT, 1, &dim, &varid), NC_NOERR);
  ASSERT_EQ(nc_put_att_text(ncid, varid, "scale_factor", 3, "0.1"), NC_NOERR);
  ASSERT_EQ(nc_close(ncid), NC_NOERR);
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(path, "T").status(), absl::StatusCode::kInvalidArgument,
                        {"bad_scale.nc:T", "scale_factor"}));
}

TEST(NetcdfFileTest, NonNetcdfFileIsInvalidArgument) {
  ScratchDir dir;
  const std::string path = dir.File("text.nc");
  WriteBytes(path, "not a netCDF file at all\n");
  EXPECT_TRUE(HasStatus(LoadNetcdfVariable(path, "T").status(), absl::StatusCode::kInvalidArgument,
                        {path}));
}

}  // namespace
}  // namespace ebzip
