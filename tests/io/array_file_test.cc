#include "client/io/array_file.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/io/hdf5_file.h"
#include "client/io/netcdf_file.h"
#include "gtest/gtest.h"
#include "tests/io/io_test_util.h"
#include "tests/real_fields.h"

namespace ebzip {
namespace {

VariableToWrite TwoFloats() {
  VariableToWrite var;
  var.type = StoredType::kFloat32;
  var.shape = {2};
  var.values = {1.25, -3.5};
  return var;
}

TEST(LooksLikeArraySourceTest, NeedsAnExistingFileBeforeTheColon) {
  ScratchDir dir;
  const std::string path = dir.File("x.nc");
  WriteBytes(path, "anything");
  EXPECT_TRUE(LooksLikeArraySource(path + ":T"));
  EXPECT_TRUE(LooksLikeArraySource(path + ":/group/T"));
  EXPECT_FALSE(LooksLikeArraySource(path));
  EXPECT_FALSE(LooksLikeArraySource(path + ":"));
  EXPECT_FALSE(LooksLikeArraySource(dir.File("missing.nc") + ":T"));
  EXPECT_FALSE(LooksLikeArraySource(dir.File("") + ":T"));  // a directory
  EXPECT_FALSE(LooksLikeArraySource("field.f32"));
}

TEST(LooksLikeArraySourceTest, FileNamesMayContainColons) {
  ScratchDir dir;
  const std::string path = dir.File("run:3.nc");
  ASSERT_TRUE(SaveNetcdfVariable(path, "T", TwoFloats()).ok());
  EXPECT_TRUE(LooksLikeArraySource(path + ":T"));
  absl::StatusOr<LoadedArray> loaded = LoadArraySource(path + ":T");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->description, "run:3.nc:T (float, 2)");
}

TEST(LoadArraySourceTest, MalformedSourcesAreInvalidArgument) {
  ScratchDir dir;
  const std::string path = dir.File("x.nc");
  ASSERT_TRUE(SaveNetcdfVariable(path, "T", TwoFloats()).ok());
  EXPECT_TRUE(HasStatus(LoadArraySource(path).status(), absl::StatusCode::kInvalidArgument,
                        {"PATH:VARIABLE", path}));
  EXPECT_TRUE(HasStatus(LoadArraySource(path + ":").status(), absl::StatusCode::kInvalidArgument,
                        {"no variable", path}));
  EXPECT_TRUE(HasStatus(LoadArraySource(dir.File("") + ":T").status(),
                        absl::StatusCode::kInvalidArgument, {"not a regular file"}));
}

TEST(LoadArraySourceTest, MissingFileIsNotFound) {
  EXPECT_TRUE(HasStatus(LoadArraySource("/nonexistent/data.nc:TEMP").status(),
                        absl::StatusCode::kNotFound, {"/nonexistent/data.nc"}));
}

TEST(LoadArraySourceTest, UnknownFormatIsInvalidArgument) {
  ScratchDir dir;
  for (const char* contents : {"", "CD", "CDF\x03 then junk", "plain text, not a data file"}) {
    const std::string path = dir.File("junk.nc");
    WriteBytes(path, contents);
    EXPECT_TRUE(HasStatus(LoadArraySource(path + ":T").status(), absl::StatusCode::kInvalidArgument,
                          {path, "neither netCDF"}))
        << contents;
  }
}

// The magic decides, whatever the name says.
TEST(LoadArraySourceTest, FormatComesFromMagicNotExtension) {
  ScratchDir dir;
  const std::string classic_as_h5 = dir.File("classic.h5");
  ASSERT_TRUE(SaveNetcdfVariable(classic_as_h5, "T", TwoFloats()).ok());
  const std::string offset64_as_bin = dir.File("offset64.bin");
  ASSERT_TRUE(
      SaveNetcdfVariable(offset64_as_bin, "T", TwoFloats(), {.format = NetcdfFormat::k64BitOffset})
          .ok());
  const std::string hdf5_as_dat = dir.File("hdf5.dat");
  ASSERT_TRUE(SaveHdf5Dataset(hdf5_as_dat, "/g/T", TwoFloats()).ok());

  for (const std::string& source :
       {classic_as_h5 + ":T", offset64_as_bin + ":T", hdf5_as_dat + ":/g/T"}) {
    absl::StatusOr<LoadedArray> loaded = LoadArraySource(source);
    ASSERT_TRUE(loaded.ok()) << source << ": " << loaded.status();
    EXPECT_EQ(ValuesOf<float>(loaded->data), (std::vector<float>{1.25f, -3.5f})) << source;
  }
}

// netCDF-4 is HDF5 underneath: a netCDF name picks the netCDF library (and
// its group syntax), any other name the HDF5 one, and both load it.
TEST(LoadArraySourceTest, Netcdf4LoadsThroughEitherLibrary) {
  ScratchDir dir;
  const std::string nc = dir.File("four.nc");
  ASSERT_TRUE(
      SaveNetcdfVariable(nc, "grp/T", TwoFloats(), {.format = NetcdfFormat::kNetcdf4}).ok());
  const std::string h5 = dir.File("four.h5");
  std::filesystem::copy_file(nc, h5);
  for (const std::string& source : {nc + ":grp/T", h5 + ":/grp/T"}) {
    absl::StatusOr<LoadedArray> loaded = LoadArraySource(source);
    ASSERT_TRUE(loaded.ok()) << source << ": " << loaded.status();
    EXPECT_EQ(ValuesOf<float>(loaded->data), (std::vector<float>{1.25f, -3.5f})) << source;
  }
}

TEST(LoadArraySourceTest, LoadsARealField) {
  const RealField& etopo20 = RealFields().back();
  ASSERT_EQ(etopo20.name, "etopo20");
  absl::StatusOr<LoadedArray> loaded =
      LoadArraySource(absl::StrCat(RealFieldPath(etopo20), ":ROSE"));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->description, "etopo20.cdf:ROSE (float, 540x1081, units=METERS)");
  EXPECT_TRUE(HasStatus(LoadArraySource(absl::StrCat(RealFieldPath(etopo20), ":ELEV")).status(),
                        absl::StatusCode::kNotFound,
                        {"etopo20.cdf", "ELEV", "ETOPO20X1_1081, ETOPO20Y, ROSE"}));
}

// Every path, failing or not, must close what it opened: a long-running
// client that probes sources would otherwise run out of descriptors.
TEST(LoadArraySourceTest, LoadsLeaveNoFileOpen) {
  ScratchDir dir;
  const std::string nc = dir.File("x.nc");
  const std::string nc4 = dir.File("x4.nc");
  const std::string h5 = dir.File("x.h5");
  VariableToWrite scalar = TwoFloats();
  scalar.shape = {};
  scalar.values = {1};
  ASSERT_TRUE(SaveNetcdfVariable(nc, "S", scalar).ok());
  ASSERT_TRUE(SaveNetcdfVariable(nc4, "g/S", scalar, {.format = NetcdfFormat::kNetcdf4}).ok());
  ASSERT_TRUE(SaveHdf5Dataset(h5, "/g/S", scalar).ok());
  const std::string h5_ok = dir.File("ok.h5");
  ASSERT_TRUE(SaveHdf5Dataset(h5_ok, "/g/T", TwoFloats()).ok());
  const std::vector<std::string> failing = {nc + ":S",    nc + ":MISSING", nc + ":g/S",
                                            nc4 + ":g/S", h5 + ":/g/S",    h5 + ":/g/MISSING",
                                            h5 + ":/g",   h5 + ":/h/S"};

  // HDF5 shares one descriptor among all opens of a file, so a leak shows
  // only if counted from before the first open.
  const int before = OpenDescriptorCount();
  for (const std::string& source : failing) {
    EXPECT_FALSE(LoadArraySource(source).ok()) << source;
    EXPECT_EQ(OpenDescriptorCount(), before) << source;
  }
  EXPECT_TRUE(LoadArraySource(h5_ok + ":/g/T").ok());
  EXPECT_TRUE(LoadArraySource(RealFieldPath(RealFields().back()) + ":ROSE").ok());
  EXPECT_EQ(OpenDescriptorCount(), before);
}

}  // namespace
}  // namespace ebzip
