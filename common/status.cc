#include "common/status.h"

#include <cstdint>

#include "common/utf8.h"

namespace capplan {

int Status::ExitCode() const {
  switch (code_) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kUsage:
    case StatusCode::kNotFound:
      return 2;
    default:
      return 1;
  }
}

Status Status::WithPrefix(const std::string& prefix) const {
  if (ok()) return *this;
  return Status(code_, prefix + ": " + message_);
}

std::string Status::ToString() const { return ok() ? "OK" : message_; }

namespace {

// Bytes in the well-formed UTF-8 character at text[i] (lead byte >= 0x80),
// or 0 when it is not one: a stray or missing continuation byte, an overlong
// form, a UTF-16 surrogate or a code point past U+10FFFF (which
// nlohmann::json refuses to dump).
size_t Utf8Char(std::string_view text, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  size_t n = 0;
  uint32_t cp = 0;
  if ((b(i) & 0xE0) == 0xC0) {
    n = 1, cp = b(i) & 0x1F;
  } else if ((b(i) & 0xF0) == 0xE0) {
    n = 2, cp = b(i) & 0x0F;
  } else if ((b(i) & 0xF8) == 0xF0) {
    n = 3, cp = b(i) & 0x07;
  } else {
    return 0;
  }
  if (i + n >= text.size()) return 0;
  for (size_t k = 1; k <= n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return n + 1;
}

}  // namespace

bool IsUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = Utf8Char(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string EchoValue(std::string_view value, size_t max_bytes) {
  size_t n = value.size();
  bool cut = false;
  if (n > max_bytes) {
    n = max_bytes;
    // Back up over UTF-8 continuation bytes so a character is never split.
    while (n > 0 && (static_cast<unsigned char>(value[n]) & 0xC0) == 0x80) --n;
    cut = true;
  }
  std::string out;
  out.reserve(n + 8);
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    // Whole UTF-8 characters pass; any other byte >= 0x80 is shown as \xNN,
    // so a message is always valid text (it may end up in a JSON file).
    if (c >= 0x80) {
      const size_t len = Utf8Char(value.substr(0, n), i);
      if (len == 0) {
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
      } else {
        out.append(value.substr(i, len));
        i += len - 1;
      }
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  if (cut) out += "...";
  return out;
}

std::string OneLine(std::string_view message, size_t max_bytes) {
  return EchoValue(message, max_bytes);
}

}  // namespace capplan
