// The ebzip HDF5 filter: H5Z callbacks and the H5PL entry points through
// which HDF5 loads it from HDF5_PLUGIN_PATH.
//
// A chunk is compressed as ebzip::Compress of the chunk as an array of its
// shape (cd_values.h), so the bytes stored are an ordinary ebzip archive.
// Reading decodes it only after checking that it is the archive this
// dataset declares (dtype, element count, bound, fill); any failure — a CRC
// mismatch, a corrupt or foreign archive, a bad parameter, no memory —
// returns 0 with the reason on HDF5's error stack, so HDF5 fails the read
// instead of handing back wrong data.
#include <H5PLextern.h>
#include <hdf5.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "hdf5_plugin/cd_values.h"

namespace ebzip::hdf5 {
namespace {

// Room for the user's words, the rank and HDF5's at most 32 dimensions.
constexpr size_t kMaxWords = kUserWords + 1 + 32;

void PushError(hid_t minor, const std::string& message) {
  H5Epush2(H5E_DEFAULT, __FILE__, "ebzip", __LINE__, H5E_ERR_CLS, H5E_PLINE, minor, "%s",
           message.c_str());
}

std::optional<DType> DatasetDType(hid_t type_id) {
  if (H5Tequal(type_id, H5T_IEEE_F32LE) > 0) return DType::kFloat32;
  if (H5Tequal(type_id, H5T_IEEE_F64LE) > 0) return DType::kFloat64;
  return std::nullopt;
}

// Whether a filter comes before this one in the dataset's pipeline: one
// that changes the values (shuffle, scale-offset, n-bit) would hand the
// codec bytes that are not the dataset's floats, and a bound kept on those
// is no bound on the data.
absl::StatusOr<bool> FilterBeforeThis(hid_t dcpl_id) {
  const int count = H5Pget_nfilters(dcpl_id);
  if (count < 0) return absl::InternalError("ebzip filter: cannot read the filter pipeline");
  for (int i = 0; i < count; ++i) {
    unsigned int flags = 0, config = 0;
    size_t no_values = 0;
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl_id, static_cast<unsigned>(i), &flags, &no_values, nullptr, 0,
                       nullptr, &config);
    if (id < 0) return absl::InternalError("ebzip filter: cannot read the filter pipeline");
    if (id == kFilterId) return i > 0;
  }
  return false;
}

// Refuses, with a reason, a dataset the filter cannot compress: HDF5 then
// fails the dataset's creation whether the filter was added as optional
// (h5py) or mandatory.
htri_t CanApply(hid_t dcpl_id, hid_t type_id, hid_t /*space_id*/) {
  if (!DatasetDType(type_id).has_value()) {
    PushError(H5E_CANAPPLY,
              "ebzip filter: the dataset's datatype must be little-endian IEEE float32 or "
              "float64");
    return -1;
  }
  auto before = FilterBeforeThis(dcpl_id);
  if (!before.ok() || *before) {
    PushError(H5E_CANAPPLY,
              before.ok() ? "ebzip filter: it must come first in the filter pipeline (no "
                            "shuffle, scale-offset or n-bit before it): it compresses the "
                            "dataset's float values"
                          : std::string(before.status().message()));
    return -1;
  }
  return 1;
}

absl::StatusOr<std::optional<double>> DatasetFill(hid_t dcpl_id) {
  H5D_fill_value_t status;
  if (H5Pfill_value_defined(dcpl_id, &status) < 0) {
    return absl::InternalError("ebzip filter: cannot read the dataset's fill value");
  }
  if (status != H5D_FILL_VALUE_USER_DEFINED) return std::optional<double>();
  double fill = 0;
  if (H5Pget_fill_value(dcpl_id, H5T_NATIVE_DOUBLE, &fill) < 0) {
    return absl::InternalError("ebzip filter: cannot read the dataset's fill value");
  }
  return std::optional<double>(fill);
}

// Completes the user's cd_values with the dataset's dtype, fill value and
// chunk shape (cd_values.h).
absl::Status SetLocalStatus(hid_t dcpl_id, hid_t type_id) {
  unsigned int flags = 0;
  size_t count = kMaxWords;
  unsigned int words[kMaxWords] = {};
  if (H5Pget_filter_by_id2(dcpl_id, kFilterId, &flags, &count, words, 0, nullptr, nullptr) < 0) {
    return absl::InternalError("ebzip filter: cannot read its cd_values");
  }
  auto user = ParseUserWords(absl::MakeConstSpan(words, std::min(count, kMaxWords)));
  if (!user.ok()) return user.status();
  const std::optional<DType> dtype = DatasetDType(type_id);
  if (!dtype.has_value()) {
    return absl::InvalidArgumentError(
        "ebzip filter: the dataset's datatype must be little-endian IEEE float32 or float64");
  }
  if (H5Pget_layout(dcpl_id) != H5D_CHUNKED) {
    return absl::InvalidArgumentError("ebzip filter: the dataset must be chunked");
  }
  hsize_t dims[32];
  const int rank = H5Pget_chunk(dcpl_id, 32, dims);
  if (rank <= 0) return absl::InternalError("ebzip filter: cannot read the chunk shape");
  const std::vector<uint64_t> chunk(dims, dims + rank);
  auto fill = DatasetFill(dcpl_id);
  if (!fill.ok()) return fill.status();
  auto complete = CompleteWords(*user, *dtype, chunk, *fill);
  if (!complete.ok()) return complete.status();
  if (H5Pmodify_filter(dcpl_id, kFilterId, flags, complete->size(), complete->data()) < 0) {
    return absl::InternalError("ebzip filter: cannot store its cd_values");
  }
  return absl::OkStatus();
}

herr_t SetLocal(hid_t dcpl_id, hid_t type_id, hid_t /*space_id*/) {
  try {
    if (absl::Status s = SetLocalStatus(dcpl_id, type_id); !s.ok()) {
      PushError(H5E_CANTINIT, std::string(s.message()));
      return -1;
    }
    return 0;
  } catch (const std::exception& e) {
    PushError(H5E_CANTINIT, absl::StrCat("ebzip filter: ", e.what()));
    return -1;
  }
}

// A buffer HDF5 may free with H5free_memory.
class H5Buffer {
 public:
  explicit H5Buffer(size_t bytes) : data_(H5allocate_memory(bytes, false)) {}
  H5Buffer(const H5Buffer&) = delete;
  H5Buffer& operator=(const H5Buffer&) = delete;
  ~H5Buffer() {
    if (data_ != nullptr) H5free_memory(data_);
  }
  void* get() const { return data_; }
  void* release() {
    void* d = data_;
    data_ = nullptr;
    return d;
  }

 private:
  void* data_;
};

// Hands `out` to HDF5 in place of *buf.
size_t Replace(H5Buffer& out, size_t bytes, size_t* buf_size, void** buf) {
  H5free_memory(*buf);
  *buf = out.release();
  *buf_size = bytes;
  return bytes;
}

absl::StatusOr<size_t> Encode(const FilterParams& p, size_t nbytes, size_t* buf_size, void** buf) {
  const ArraySpec spec = p.ChunkSpec();
  if (nbytes != spec.num_bytes()) {
    return absl::InternalError(absl::StrCat("ebzip filter: HDF5 passed ", nbytes,
                                            " bytes for a chunk of ", spec.num_bytes()));
  }
  CompressOptions options;
  options.mode = p.mode;
  options.bound = p.bound;
  options.fill_value = p.fill_value;
  auto archive = Compress(spec, {static_cast<const uint8_t*>(*buf), nbytes}, options);
  if (!archive.ok()) return archive.status();
  if (archive->size() <= *buf_size) {
    std::memcpy(*buf, archive->data(), archive->size());
    return archive->size();
  }
  H5Buffer out(archive->size());
  if (out.get() == nullptr) return absl::ResourceExhaustedError("ebzip filter: out of memory");
  std::memcpy(out.get(), archive->data(), archive->size());
  return Replace(out, archive->size(), buf_size, buf);
}

absl::StatusOr<size_t> Decode(const FilterParams& p, size_t nbytes, size_t* buf_size, void** buf) {
  const absl::Span<const uint8_t> archive(static_cast<const uint8_t*>(*buf), nbytes);
  auto info = ReadArchiveInfo(archive);
  if (!info.ok()) return info.status();
  const format::FileHeader& h = info->header;
  const ArraySpec spec = p.ChunkSpec();
  // The archive must be the one this dataset's parameters made: another
  // chunk's bytes, or another dataset's, would decode to wrong values.
  if (h.dtype != p.dtype || info->spec().num_elements() != spec.num_elements()) {
    return absl::DataLossError(absl::StrCat(
        "ebzip filter: the chunk holds a ", DTypeName(h.dtype), " ", ShapeToString(h.shape),
        " archive, the dataset's chunks are ", DTypeName(p.dtype), " ", ShapeToString(p.chunk)));
  }
  if (h.bound_mode != p.mode ||
      std::bit_cast<uint64_t>(h.bound_value) != std::bit_cast<uint64_t>(p.bound) ||
      h.fill_value.has_value() != p.fill_value.has_value() ||
      (h.fill_value.has_value() &&
       std::bit_cast<uint64_t>(*h.fill_value) != std::bit_cast<uint64_t>(*p.fill_value))) {
    return absl::DataLossError(
        "ebzip filter: the chunk's archive has another bound or fill value than the dataset's "
        "filter parameters");
  }
  const size_t bytes = spec.num_bytes();
  H5Buffer out(bytes);
  if (out.get() == nullptr) return absl::ResourceExhaustedError("ebzip filter: out of memory");
  if (absl::Status s = DecompressInto(*info, archive, {static_cast<uint8_t*>(out.get()), bytes});
      !s.ok()) {
    return s;
  }
  return Replace(out, bytes, buf_size, buf);
}

size_t Filter(unsigned int flags, size_t cd_nelmts, const unsigned int cd_values[], size_t nbytes,
              size_t* buf_size, void** buf) {
  const bool reading = (flags & H5Z_FLAG_REVERSE) != 0;
  try {
    absl::StatusOr<size_t> result;
    auto params = ParseWords({cd_values, cd_nelmts});
    if (!params.ok()) {
      result = params.status();
    } else if (reading) {
      result = Decode(*params, nbytes, buf_size, buf);
    } else {
      result = Encode(*params, nbytes, buf_size, buf);
    }
    if (result.ok()) return *result;
    PushError(H5E_CANTFILTER, absl::StrCat(reading ? "ebzip filter, reading a chunk: "
                                                   : "ebzip filter, writing a chunk: ",
                                           result.status().ToString()));
  } catch (const std::exception& e) {
    PushError(H5E_CANTFILTER, absl::StrCat("ebzip filter: ", e.what()));
  }
  return 0;
}

const H5Z_class2_t kFilterClass = {
    H5Z_CLASS_T_VERS,
    static_cast<H5Z_filter_t>(kFilterId),
    1,  // encoder present
    1,  // decoder present
    "ebzip: error-bounded lossy compression of float32/float64",
    CanApply,
    SetLocal,
    Filter,
};

}  // namespace
}  // namespace ebzip::hdf5

extern "C" {

H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }

const void* H5PLget_plugin_info(void) { return &ebzip::hdf5::kFilterClass; }

}  // extern "C"
