// A libFuzzer target for one entry of fuzz_entries.h, picked at compile time
// by CAPPLAN_FUZZ_TARGET (tests/fuzz/CMakeLists.txt builds one binary each).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const capplan::fuzz::Target* target = [] {
    const capplan::fuzz::Target* t = capplan::fuzz::FindTarget(CAPPLAN_FUZZ_TARGET);
    if (t == nullptr) {
      std::fprintf(stderr, "no fuzz entry named %s\n", CAPPLAN_FUZZ_TARGET);
      std::abort();
    }
    return t;
  }();
  target->run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
