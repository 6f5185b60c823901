#include "common/status.h"

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
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
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
          static constexpr char kHex[] = "0123456789abcdef";
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
