// ArchiveRoot: every way a client-supplied path could leave the root, or
// open what is not a regular file, is refused, by openat2 and by the
// component walk alike.
#include "server/archive_root.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace ebzip::server {
namespace {

namespace fs = std::filesystem;
using Resolver = ArchiveRoot::Resolver;

void WriteFile(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// base/root: the root; base/outside: what no path may reach.
class ArchiveRootTest : public ::testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ebzip_root_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    root_ = base_ / "root";
    fs::create_directories(root_ / "a" / "b");
    fs::create_directories(base_ / "outside");
    WriteFile(root_ / "top.ebz", "top");
    WriteFile(root_ / "a" / "b" / "x.ebz", "inside");
    WriteFile(base_ / "outside" / "secret.ebz", "secret");
    fs::create_symlink(base_ / "outside" / "secret.ebz", root_ / "abs_link");
    fs::create_symlink("../outside/secret.ebz", root_ / "rel_link_out");
    fs::create_symlink("b/x.ebz", root_ / "a" / "link_in");  // stays inside: still refused
    fs::create_symlink("../outside", root_ / "dir_link_out");
    fs::create_symlink("a", root_ / "dir_link_in");
    fs::create_symlink("/dev/null", root_ / "dev_link");
    fs::create_directories(root_ / "dir.ebz");
    ASSERT_EQ(mkfifo((root_ / "fifo.ebz").c_str(), 0600), 0);
    auto root = ArchiveRoot::Open(root_.string(), GetParam());
    ASSERT_TRUE(root.ok()) << root.status();
    root_obj_ = *std::move(root);
  }
  void TearDown() override { fs::remove_all(base_); }

  absl::StatusCode Code(const std::string& path) {
    return root_obj_->OpenFile(path).status().code();
  }

  fs::path base_, root_;
  std::unique_ptr<ArchiveRoot> root_obj_;
};

TEST_P(ArchiveRootTest, OpensRegularFilesBelowTheRoot) {
  for (const auto& [path, text] : std::vector<std::pair<std::string, std::string>>{
           {"top.ebz", "top"}, {"a/b/x.ebz", "inside"}}) {
    auto f = root_obj_->OpenFile(path);
    ASSERT_TRUE(f.ok()) << path << ": " << f.status();
    EXPECT_EQ(f->size, text.size());
    std::string got(f->size, '\0');
    ASSERT_TRUE(
        ReadAt(f->fd.get(), 0, absl::MakeSpan(reinterpret_cast<uint8_t*>(got.data()), got.size()))
            .ok());
    EXPECT_EQ(got, text);
  }
}

TEST_P(ArchiveRootTest, MalformedPathsAreInvalid) {
  for (const std::string& p :
       {std::string(""), std::string("/etc/passwd"), std::string("../outside/secret.ebz"),
        std::string("a/../../outside/secret.ebz"), std::string("a/b/../x.ebz"),
        std::string("a/./b/x.ebz"), std::string("./top.ebz"), std::string("a//b/x.ebz"),
        std::string("a/b/x.ebz/"), std::string("top.ebz\0x", 9), std::string(5000, 'a'),
        std::string(300, 'a') + "/x"}) {
    EXPECT_EQ(Code(p), absl::StatusCode::kInvalidArgument) << absl::CHexEscape(p);
  }
}

TEST_P(ArchiveRootTest, SymbolicLinksAreNeverFollowed) {
  for (const char* p : {"abs_link", "rel_link_out", "a/link_in", "dir_link_out/secret.ebz",
                        "dir_link_in/b/x.ebz", "dev_link"}) {
    EXPECT_EQ(Code(p), absl::StatusCode::kPermissionDenied) << p;
  }
}

TEST_P(ArchiveRootTest, OnlyRegularFiles) {
  EXPECT_EQ(Code("dir.ebz"), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Code("a"), absl::StatusCode::kPermissionDenied);
  // A FIFO without a writer: refused at once, not waited on.
  EXPECT_EQ(Code("fifo.ebz"), absl::StatusCode::kPermissionDenied);
  // A device node, where this process may make one (root in a container).
  if (mknod((root_ / "null.ebz").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0) {
    EXPECT_EQ(Code("null.ebz"), absl::StatusCode::kPermissionDenied);
  }
}

TEST_P(ArchiveRootTest, MissingFilesAreNotFound) {
  EXPECT_EQ(Code("nothing.ebz"), absl::StatusCode::kNotFound);
  EXPECT_EQ(Code("a/nothing/x.ebz"), absl::StatusCode::kNotFound);
  EXPECT_EQ(Code("top.ebz/x.ebz"), absl::StatusCode::kNotFound);  // a file as a directory
}

TEST_P(ArchiveRootTest, AFileThatShrankIsDataLoss) {
  auto f = root_obj_->OpenFile("top.ebz");
  ASSERT_TRUE(f.ok());
  std::string got(10, '\0');
  EXPECT_EQ(
      ReadAt(f->fd.get(), 0, absl::MakeSpan(reinterpret_cast<uint8_t*>(got.data()), 10)).code(),
      absl::StatusCode::kDataLoss);
}

INSTANTIATE_TEST_SUITE_P(Resolvers, ArchiveRootTest,
                         ::testing::Values(Resolver::kAuto, Resolver::kWalk),
                         [](const auto& param_info) {
                           return param_info.param == Resolver::kAuto ? "Auto" : "Walk";
                         });

TEST(ArchiveRoot, TheRootMustBeADirectory) {
  EXPECT_EQ(ArchiveRoot::Open("/nonexistent/ebzip").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ArchiveRoot::Open("/etc/hostname").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ArchiveRoot::Open("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ArchiveRoot, UsesOpenat2WhereTheKernelHasIt) {
  auto root = ArchiveRoot::Open("/tmp");
  ASSERT_TRUE(root.ok());
  // Not asserted true: a kernel before 5.6 or a seccomp filter may lack it;
  // the walk then answers, which the suite above checks as well.
  std::cout << "openat2: " << ((*root)->uses_openat2() ? "yes" : "no") << "\n";
}

}  // namespace
}  // namespace ebzip::server
