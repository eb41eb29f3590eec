// Internal to client/io: what the HDF5 reader and writer share: owned
// identifiers, quiet calls, and absolute dataset names.
#ifndef EBZIP_CLIENT_IO_HDF5_HANDLE_H_
#define EBZIP_CLIENT_IO_HDF5_HANDLE_H_

#include <hdf5.h>

#include <string>
#include <string_view>
#include <utility>

namespace ebzip {

// Owns an identifier and closes it with the function for its kind (file,
// dataset, dataspace, ...) on every return path. Invalid ids (< 0, what
// failed H5*open/create calls return) are held but never closed.
class Hdf5Id {
 public:
  using CloseFunction = herr_t (*)(hid_t);

  Hdf5Id(hid_t id, CloseFunction close) : id_(id), close_(close) {}
  Hdf5Id(Hdf5Id&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Hdf5Id& operator=(Hdf5Id&&) = delete;
  Hdf5Id(const Hdf5Id&) = delete;
  Hdf5Id& operator=(const Hdf5Id&) = delete;
  ~Hdf5Id() {
    if (id_ >= 0) close_(id_);
  }

  bool valid() const { return id_ >= 0; }
  hid_t get() const { return id_; }

  // For writers, whose final close flushes and may fail.
  herr_t Close() { return id_ >= 0 ? close_(std::exchange(id_, -1)) : 0; }

 private:
  hid_t id_;
  CloseFunction close_;
};

// HDF5 prints its error stack to stderr on every failed call; we report
// failures as Status instead, so this turns the printing off for a scope.
// The setting is per thread in the thread-safe library Debian ships.
class ScopedHdf5Quiet {
 public:
  ScopedHdf5Quiet() {
    H5Eget_auto2(H5E_DEFAULT, &saved_function_, &saved_data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ScopedHdf5Quiet(const ScopedHdf5Quiet&) = delete;
  ScopedHdf5Quiet& operator=(const ScopedHdf5Quiet&) = delete;
  ~ScopedHdf5Quiet() { H5Eset_auto2(H5E_DEFAULT, saved_function_, saved_data_); }

 private:
  H5E_auto2_t saved_function_ = nullptr;
  void* saved_data_ = nullptr;
};

// "/dset" for "dset": the C API resolves relative names against whatever
// object it is given, so names are made absolute once, here.
inline std::string AbsoluteName(std::string_view dataset) {
  std::string name(dataset);
  if (name.empty() || name[0] != '/') name.insert(name.begin(), '/');
  return name;
}

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_HDF5_HANDLE_H_
