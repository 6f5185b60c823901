#include "common/units.h"
#include "report/text_util.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace capplan::report {

std::string FormatNumber(double v, int digits) {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return "0";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  int decimals = digits - 1 - magnitude;
  if (decimals < 0) decimals = 0;
  if (decimals > 9) decimals = 9;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  std::string s(buf);
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string FormatPercent(double fraction) {
  // A change against a zero baseline is infinite: no percentage says it.
  if (!std::isfinite(fraction)) return "n/a";
  const double pct = fraction * 100.0;
  char buf[32];
  if (std::fabs(pct) < 10.0 && pct != 0.0) {
    std::snprintf(buf, sizeof(buf), "%.1f%%", pct);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f%%", pct);
  }
  return buf;
}

std::string FormatGiB(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", bytes / kBytesPerGiB);
  return buf;
}

std::string FormatChange(double change) {
  const std::string p = FormatPercent(std::fabs(change));
  if (p == "0%") return "±0%";
  if (p == "n/a") return p;
  return (change < 0 ? "\u2212" : "+") + p;
}

std::string FormatCompact(double v) {
  const double m = std::fabs(v);
  if (m >= 1e6 && std::isfinite(m)) return FormatNumber(v / 1e6) + "M";
  if (m >= 1e4 && std::isfinite(m)) return FormatNumber(v / 1e3) + "K";
  return FormatNumber(v);
}

bool IsAbsolutePath(std::string_view path) {
  if (!path.empty() && path[0] == '/') return true;
  return path.size() > 2 && std::isalpha(static_cast<unsigned char>(path[0])) && path[1] == ':' &&
         (path[2] == '\\' || path[2] == '/');
}

std::string ScrubAbsolutePaths(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    // A path starts a word ("/x/y", "(/x/y", "'/x/y", "=/x/y") and holds a
    // second slash, so "tok/s" or " /GPU" are left alone.
    const bool word_start =
        i == 0 || std::string_view(" \t\n('\"=:,[").find(text[i - 1]) != std::string_view::npos;
    if (text[i] == '/' && word_start) {
      size_t end = i;
      while (end < text.size() &&
             std::string_view(" \t\n)'\",;]").find(text[end]) == std::string_view::npos) {
        ++end;
      }
      const std::string_view path = text.substr(i, end - i);
      if (path.find('/', 1) != std::string_view::npos) {
        std::string_view trimmed = path;
        while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.remove_suffix(1);
        out += trimmed.substr(trimmed.rfind('/') + 1);
        i = end;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string MarkdownCell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace capplan::report
