// UTF-8 checks for text that ends up in JSON (which holds UTF-8 only, and
// nlohmann::json refuses to dump anything else).
#ifndef CAPPLAN_COMMON_UTF8_H_
#define CAPPLAN_COMMON_UTF8_H_

#include <string_view>

namespace capplan {

// True when `text` is well-formed UTF-8: no stray or missing continuation
// bytes, overlong forms, UTF-16 surrogates or code points past U+10FFFF.
// (EchoValue, common/status.h, shows any other byte >= 0x80 as \xNN.)
bool IsUtf8(std::string_view text);

}  // namespace capplan

#endif  // CAPPLAN_COMMON_UTF8_H_
