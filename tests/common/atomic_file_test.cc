// Folder results written through streams: complete or absent.
#include "common/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

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

}  // namespace
}  // namespace capplan
