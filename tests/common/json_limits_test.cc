// The limits every JSON reader shares (ParseJson, ReadJsonFile, ReadFile,
// ParseFlagValue): each hostile input is a one-line error naming where it
// is, never an exception, a crash or a silently accepted value.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/atomic_file.h"
#include "common/json_util.h"
#include "common/status.h"
#include "tests/test_util/temp_dir.h"

namespace capplan {
namespace {

std::string Nested(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  for (int i = 0; i < depth; ++i) s += "}";
  return s;
}

void ExpectOneLineUsage(const Status& s) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUsage) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
}

TEST(JsonLimits, NumberBeyondDoubleIsAnErrorWithItsPath) {
  for (const char* text :
       {R"({"deployment": {"mem": 1e309}})", R"({"deployment": {"mem": -1E400}})"}) {
    auto r = ParseJson(text, "s.json");
    ExpectOneLineUsage(r.status());
    EXPECT_NE(r.status().message().find("s.json: /deployment/mem: number"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("out of range"), std::string::npos);
  }
  auto arr = ParseJson(R"({"v": [1, 2, 1e999]})", "s.json");
  ExpectOneLineUsage(arr.status());
  EXPECT_NE(arr.status().message().find("s.json: /v/2: number"), std::string::npos)
      << arr.status().message();
}

TEST(JsonLimits, DuplicateKeysAreErrors) {
  auto r = ParseJson(R"({"deployment": {"tp": 8, "tp": 4}})", "s.json");
  ExpectOneLineUsage(r.status());
  EXPECT_NE(r.status().message().find("s.json: /deployment/tp: duplicate key 'tp'"),
            std::string::npos)
      << r.status().message();
  // The same key in sibling objects is fine.
  EXPECT_TRUE(ParseJson(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})", "s").ok());
}

TEST(JsonLimits, NestingIsBounded) {
  EXPECT_TRUE(ParseJson(Nested(kMaxJsonDepth), "s.json").ok());
  auto r = ParseJson(Nested(100000), "s.json");
  ExpectOneLineUsage(r.status());
  EXPECT_NE(r.status().message().find("nested deeper than 512 levels"), std::string::npos)
      << r.status().message();
  EXPECT_LT(r.status().message().size(), 400u);
  std::string arrays(100000, '[');
  ExpectOneLineUsage(ParseJson(arrays, "s.json").status());
}

TEST(JsonLimits, SyntaxErrorsKeepLineAndColumn) {
  auto r = ParseJson("{\n  \"a\": tru }", "s.json");
  ExpectOneLineUsage(r.status());
  EXPECT_NE(r.status().message().find("s.json: line 2"), std::string::npos) << r.status().message();
}

TEST(JsonLimits, IntegersBeyondInt64AreRefused) {
  auto doc = ParseJson(R"({"a": 18446744073709551615, "b": 9223372036854775807})", "s.json");
  ASSERT_TRUE(doc.ok());
  JsonObject o(*doc, "s.json", "");
  int64_t a = 0, b = 0;
  const Status s = o.Get("a", &a);
  ExpectOneLineUsage(s);
  EXPECT_NE(s.message().find("s.json: /a: must be an integer"), std::string::npos);
  EXPECT_TRUE(o.Get("b", &b).ok());
  EXPECT_EQ(b, INT64_MAX);
}

TEST(JsonLimits, FlagValuesParseLikeJsonButRefuseWhatFilesRefuse) {
  auto s = ParseFlagValue("fp8", "--set x");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "fp8");
  auto n = ParseFlagValue("4", "--set x");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 4);
  ExpectOneLineUsage(ParseFlagValue("1e309", "--set x").status());
  ExpectOneLineUsage(ParseFlagValue(std::string(50, '1') + "e300", "--set x").status());
  ExpectOneLineUsage(ParseFlagValue(R"({"a":1,"a":2})", "--set x").status());
  nlohmann::json doc = nlohmann::json::object();
  const Status set = SetDotted(&doc, "deployment.mem_fraction_static", "1e400", "--set");
  ExpectOneLineUsage(set);
  EXPECT_NE(set.message().find("out of range"), std::string::npos) << set.message();
}

TEST(JsonLimits, EchoedValuesAreEscapedAndTruncated) {
  auto doc = ParseJson(R"({"kv": "bf16\n", "big": ")" + std::string(100000, 'x') + "\"}", "s.json");
  ASSERT_TRUE(doc.ok());
  JsonObject o(*doc, "s.json", "");
  std::string kv;
  ASSERT_TRUE(o.Get("kv", &kv).ok());
  const Status s = o.CheckOneOf("kv", kv, {"bf16", "fp8"});
  ExpectOneLineUsage(s);
  EXPECT_NE(s.message().find("'bf16\\n'"), std::string::npos) << s.message();
  int64_t big = 0;
  const Status t = o.Get("big", &big);
  ExpectOneLineUsage(t);
  EXPECT_LT(t.message().size(), 200u);
  EXPECT_NE(t.message().find("..."), std::string::npos);
  EXPECT_EQ(EchoValue("a\tb\x01"), "a\\tb\\x01");
  EXPECT_EQ(EchoValue(std::string(100, 'y'), 10), "yyyyyyyyyy...");
  // A multi-byte character is never cut in half.
  EXPECT_EQ(EchoValue("ab\xc3\xa9", 3), "ab...");
}

TEST(JsonLimits, InputsMustBeRegularFilesOfBoundedSize) {
  const std::string dir = test_util::TestTempDir();
  const Status d = ReadJsonFile(dir).status();
  ExpectOneLineUsage(d);
  EXPECT_NE(d.message().find("is a directory"), std::string::npos) << d.message();

  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Status f = ReadJsonFile(fifo).status();  // must not block
  ExpectOneLineUsage(f);
  EXPECT_NE(f.message().find("not a regular file"), std::string::npos) << f.message();

  ExpectOneLineUsage(ReadFile("/dev/zero").status());

  const std::string big = dir + "/big.json";
  std::ofstream(big) << std::string(2000, ' ');
  const Status b = ReadFile(big, 1000).status();
  ExpectOneLineUsage(b);
  EXPECT_NE(b.message().find("larger than"), std::string::npos) << b.message();
  EXPECT_TRUE(ReadFile(big, 2000).ok());

  const Status longname = ReadJsonFile(dir + "/" + std::string(300, 'm') + ".json").status();
  ASSERT_FALSE(longname.ok());
  EXPECT_EQ(longname.code(), StatusCode::kNotFound) << longname.message();
  EXPECT_EQ(ReadFile(dir + "/absent.json").status().code(), StatusCode::kNotFound);
}

TEST(AtomicFile, RefusesSpecialFilesAndFollowsSymlinks) {
  const std::string dir = test_util::TestTempDir();
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Status s = WriteFileAtomic(fifo, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s.message();
  struct stat sb {};
  ASSERT_EQ(::lstat(fifo.c_str(), &sb), 0);
  EXPECT_TRUE(S_ISFIFO(sb.st_mode)) << "the FIFO was replaced";
  EXPECT_FALSE(WriteFileAtomic("/dev/null", "x").ok());
  EXPECT_FALSE(WriteFileAtomic(dir, "x").ok());

  // A link to a file: the target gets the content, the link stays a link.
  const std::string target = dir + "/target.txt";
  const std::string link = dir + "/link.txt";
  std::ofstream(target) << "old";
  std::filesystem::create_symlink("target.txt", link);
  ASSERT_TRUE(WriteFileAtomic(link, "new").ok());
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  auto text = ReadFile(target);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "new");
  // A link to a device is refused like the device.
  const std::string dev_link = dir + "/null_link";
  std::filesystem::create_symlink("/dev/null", dev_link);
  EXPECT_FALSE(WriteFileAtomic(dev_link, "x").ok());
  EXPECT_TRUE(std::filesystem::is_symlink(dev_link));
}

TEST(OneLine, EscapesAndCaps) {
  EXPECT_EQ(OneLine("a\nb"), "a\\nb");
  EXPECT_EQ(OneLine(std::string(10000, 'z')).size(), 4096u + 3);
}

}  // namespace
}  // namespace capplan
