// Folder results written through streams: complete or absent.
#include "common/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

#include "tests/test_util/temp_dir.h"

namespace capplan {
namespace {

namespace fs = std::filesystem;

// A path that does not exist yet, in the test's own scratch directory.
std::string Fresh(const std::string& name) { return test_util::TestTempPath(name); }

std::string Read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(WriteDirAtomicStreamed, WritesEveryFileInOrder) {
  const std::string dir = Fresh("ok");
  std::string seen;
  ASSERT_TRUE(WriteDirAtomicStreamed(dir, {{"a.csv",
                                            [&](std::ostream& os) {
                                              for (int i = 0; i < 1000; ++i) os << i << "\n";
                                              seen = "a";
                                              return Status::Ok();
                                            }},
                                           {"b.json",
                                            [&](std::ostream& os) {
                                              os << "{\"after\":\"" << seen << "\"}";
                                              return Status::Ok();
                                            }}})
                  .ok());
  EXPECT_EQ(Read(dir + "/b.json"), "{\"after\":\"a\"}");
  EXPECT_EQ(Read(dir + "/a.csv").substr(0, 6), "0\n1\n2\n");
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  EXPECT_EQ(n, 2u);  // no temporaries left
}

TEST(WriteDirAtomicStreamed, AWriterErrorLeavesNoFolderAndIsReturnedAsIs) {
  const std::string dir = Fresh("fail");
  const Status st = WriteDirAtomicStreamed(dir, {{"a.csv", [](std::ostream& os) {
                                                    os << "partial";
                                                    return Status::Invalid("x.json: /y: bad");
                                                  }}});
  EXPECT_EQ(st.message(), "x.json: /y: bad");
  EXPECT_FALSE(fs::exists(dir));
}

TEST(WriteDirAtomicStreamed, AWriterErrorKeepsTheEarlierResult) {
  const std::string dir = Fresh("keep");
  ASSERT_TRUE(WriteDirAtomic(dir, {{"a.csv", "earlier"}}).ok());
  const Status st = WriteDirAtomicStreamed(dir, {{"a.csv", [](std::ostream& os) {
                                                    os << "later";
                                                    return Status::Internal("stop");
                                                  }}});
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(Read(dir + "/a.csv"), "earlier");
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  EXPECT_EQ(n, 1u);
}

// Large enough that the kernel is asked to start writing it on the way
// (every 8 MiB).
std::string LargeText() {
  std::string text;
  for (int i = 0; text.size() < (size_t{20} << 20); ++i) text += std::to_string(i) + ",row\n";
  return text;
}

TEST(WriteDirAtomicStreamed, ALargeFileArrivesWhole) {
  const std::string dir = Fresh("large");
  const std::string text = LargeText();
  ASSERT_TRUE(WriteDirAtomicStreamed(dir, {{"a.csv",
                                            [&](std::ostream& os) {
                                              for (size_t at = 0; at < text.size(); at += 65536) {
                                                os << std::string_view(text).substr(at, 65536);
                                              }
                                              return Status::Ok();
                                            }}})
                  .ok());
  EXPECT_TRUE(Read(dir + "/a.csv") == text);
}

// A write the file system refuses part way (here the process's file size
// limit: EFBIG, as a full disk's ENOSPC) fails the call and leaves nothing.
TEST(WriteDirAtomicStreamed, AWriteErrorLeavesNoFolder) {
  const std::string dir = Fresh("too_large");
  const std::string text = LargeText();
  rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = rlim_t{12} << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const Status st = WriteDirAtomicStreamed(dir, {{"a.csv", [&](std::ostream& os) {
                                                    os << text;
                                                    return Status::Ok();
                                                  }}});
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot write a.csv"), std::string::npos) << st.message();
  EXPECT_FALSE(fs::exists(dir));
}

}  // namespace
}  // namespace capplan
