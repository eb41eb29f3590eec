#include "client/io/hdf5_file.h"

#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/io/io_test_util.h"

namespace ebzip {
namespace {

VariableToWrite Values(StoredType type, std::vector<uint64_t> shape, std::vector<double> values) {
  VariableToWrite var;
  var.type = type;
  var.shape = std::move(shape);
  var.values = std::move(values);
  return var;
}

TEST(Hdf5FileTest, FloatRoundTripsExactlyWithFillAndUnits) {
  ScratchDir dir;
  const std::string path = dir.File("f.h5");
  VariableToWrite var = Values(StoredType::kFloat32, {3, 2}, {1.5, -2.25, 1e30, -1e34, 0, 1e-40});
  var.fill_value = -1e34;
  var.units = "m/s";
  ASSERT_TRUE(SaveHdf5Dataset(path, "/wind/u", var).ok());

  absl::StatusOr<LoadedArray> loaded = LoadHdf5Dataset(path, "/wind/u");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->spec.dtype, DType::kFloat32);
  EXPECT_EQ(loaded->spec.shape, (std::vector<uint64_t>{3, 2}));
  const std::vector<float> got = ValuesOf<float>(loaded->data);
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<float>(var.values[i]));
  EXPECT_EQ(loaded->fill_value, static_cast<double>(-1e34f));
  EXPECT_EQ(loaded->description, "f.h5:/wind/u (float, 3x2, units=m/s)");

  absl::StatusOr<LoadedArray> relative = LoadHdf5Dataset(path, "wind/u");
  ASSERT_TRUE(relative.ok()) << relative.status();
  EXPECT_EQ(relative->data, loaded->data);
}

TEST(Hdf5FileTest, BigEndianDoubleLoadsLittleEndian) {
  ScratchDir dir;
  const std::string path = dir.File("d.h5");
  VariableToWrite var = Values(StoredType::kFloat64, {2, 1, 2, 1}, {0.1, -1e300, 5e-324, -0.0});
  ASSERT_TRUE(SaveHdf5Dataset(path, "d", var, {.big_endian = true}).ok());

  absl::StatusOr<LoadedArray> loaded = LoadHdf5Dataset(path, "d");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->spec.dtype, DType::kFloat64);
  EXPECT_EQ(loaded->spec.shape, (std::vector<uint64_t>{2, 1, 2, 1}));
  const std::vector<double> got = ValuesOf<double>(loaded->data);
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::memcmp(&got[i], &var.values[i], sizeof(double)), 0) << i;
  }
  EXPECT_FALSE(loaded->fill_value.has_value());
}

TEST(Hdf5FileTest, PackedShortIsUnpackedToFloat) {
  ScratchDir dir;
  const std::string path = dir.File("s.h5");
  VariableToWrite var = Values(StoredType::kInt16, {4}, {-32767, 0, 1234, -32768});
  var.scale_factor = 0.5;
  var.add_offset = -10;
  var.fill_value = -32768;
  ASSERT_TRUE(SaveHdf5Dataset(path, "s", var).ok());

  absl::StatusOr<LoadedArray> loaded = LoadHdf5Dataset(path, "s");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->spec.dtype, DType::kFloat32);
  EXPECT_EQ(ValuesOf<float>(loaded->data),
            (std::vector<float>{-32767 * 0.5f - 10, -10, 1234 * 0.5f - 10, -32768 * 0.5f - 10}));
  EXPECT_EQ(loaded->fill_value, -32768 * 0.5 - 10);
  EXPECT_EQ(loaded->description,
            "s.h5:s (int16 unpacked to float with scale_factor=0.5 add_offset=-10, 4)");
}

TEST(Hdf5FileTest, MissingDatasetListsTheDatasets) {
  ScratchDir dir;
  const std::string path = dir.File("m.h5");
  ASSERT_TRUE(SaveHdf5Dataset(path, "/a/b/T", Values(StoredType::kFloat32, {1}, {1})).ok());
  EXPECT_TRUE(HasStatus(LoadHdf5Dataset(path, "/a/b/S").status(), absl::StatusCode::kNotFound,
                        {path, "/a/b/S", "datasets: /a/b/T"}));
  EXPECT_TRUE(HasStatus(LoadHdf5Dataset(path, "/x/y/T").status(), absl::StatusCode::kNotFound,
                        {path, "/x/y/T", "datasets: /a/b/T"}));
  EXPECT_TRUE(HasStatus(LoadHdf5Dataset(path, "/a/b").status(), absl::StatusCode::kInvalidArgument,
                        {"m.h5:/a/b", "not a dataset"}));
}

TEST(Hdf5FileTest, MissingFileIsNotFound) {
  EXPECT_TRUE(HasStatus(LoadHdf5Dataset("/nonexistent/x.h5", "/T").status(),
                        absl::StatusCode::kNotFound, {"/nonexistent/x.h5"}));
}

TEST(Hdf5FileTest, NonHdf5FileIsInvalidArgument) {
  ScratchDir dir;
  const std::string path = dir.File("text.h5");
  WriteBytes(path, "not HDF5\n");
  EXPECT_TRUE(
      HasStatus(LoadHdf5Dataset(path, "/T").status(), absl::StatusCode::kInvalidArgument, {path}));
}

TEST(Hdf5FileTest, ScalarAndRankFiveAreRejected) {
  ScratchDir dir;
  const std::string path = dir.File("ranks.h5");
  ASSERT_TRUE(SaveHdf5Dataset(path, "s", Values(StoredType::kFloat32, {}, {1})).ok());
  EXPECT_TRUE(HasStatus(LoadHdf5Dataset(path, "s").status(), absl::StatusCode::kInvalidArgument,
                        {"ranks.h5:s", "scalar"}));
  ASSERT_TRUE(
      SaveHdf5Dataset(path, "r", Values(StoredType::kFloat32, {1, 1, 2, 1, 1}, {1, 2})).ok());
  EXPECT_TRUE(HasStatus(LoadHdf5Dataset(path, "r").status(), absl::StatusCode::kInvalidArgument,
                        {"ranks.h5:r", "rank 5"}));
}

// Types the writer has no StoredType for, built with the C API.
TEST(Hdf5FileTest, NonNumericAndWideTypesAreRejected) {
  ScratchDir dir;
  const std::string path = dir.File("types.h5");
  {
    const hsize_t dims[1] = {2};
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t string_type = H5Tcopy(H5T_C_S1);
    H5Tset_size(string_type, 8);
    const hid_t compound = H5Tcreate(H5T_COMPOUND, 8);
    H5Tinsert(compound, "a", 0, H5T_IEEE_F32LE);
    H5Tinsert(compound, "b", 4, H5T_IEEE_F32LE);
    for (auto [name, type] : {std::pair{"str", string_type}, std::pair{"cmp", compound},
                              std::pair{"i64", H5T_STD_I64LE}}) {
      H5Dclose(H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    }
    H5Tclose(compound);
    H5Tclose(string_type);
    H5Sclose(space);
    ASSERT_GE(H5Fclose(file), 0);
  }
  EXPECT_TRUE(HasStatus(LoadHdf5Dataset(path, "str").status(), absl::StatusCode::kInvalidArgument,
                        {"types.h5:str", "string"}));
  EXPECT_TRUE(HasStatus(LoadHdf5Dataset(path, "cmp").status(), absl::StatusCode::kInvalidArgument,
                        {"types.h5:cmp", "compound"}));
  EXPECT_TRUE(HasStatus(LoadHdf5Dataset(path, "i64").status(), absl::StatusCode::kInvalidArgument,
                        {"types.h5:i64", "int64"}));
}

TEST(Hdf5FileTest, VariableLengthUnitsAreRead) {
  ScratchDir dir;
  const std::string path = dir.File("vlen.h5");
  ASSERT_TRUE(SaveHdf5Dataset(path, "T", Values(StoredType::kFloat32, {1}, {1})).ok());
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t dataset = H5Dopen2(file, "T", H5P_DEFAULT);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t attribute = H5Acreate2(dataset, "units", type, space, H5P_DEFAULT, H5P_DEFAULT);
    const char* units = "degC";
    H5Awrite(attribute, type, &units);
    H5Aclose(attribute);
    H5Sclose(space);
    H5Tclose(type);
    H5Dclose(dataset);
    ASSERT_GE(H5Fclose(file), 0);
  }
  absl::StatusOr<LoadedArray> loaded = LoadHdf5Dataset(path, "T");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->description, "vlen.h5:T (float, 1, units=degC)");
}

}  // namespace
}  // namespace ebzip
