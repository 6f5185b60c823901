// Errors as values (LevelDB style). Library code returns Status or Result<T>;
// only main() turns them into exit codes and messages.
//
// Exit-code convention: usage errors (bad flags, unknown names,
// malformed input files) exit 2; valid input describing a configuration that
// cannot work (weights do not fit, TP does not divide heads) exits 1.
#ifndef CAPPLAN_COMMON_STATUS_H_
#define CAPPLAN_COMMON_STATUS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace capplan {

enum class StatusCode {
  kOk = 0,
  kUsage,          // bad flag, malformed JSON, unknown field or name -> exit 2
  kInvalidConfig,  // well-formed but impossible configuration -> exit 1
  kNotFound,       // missing file or unknown model -> exit 2
  kIoError,        // could not read/write -> exit 1
  kUnavailable,    // e.g. no CUDA device -> exit 1
  kInternal,       // a bug or a broken invariant -> exit 1
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Usage(std::string m) { return Status(StatusCode::kUsage, std::move(m)); }
  static Status Invalid(std::string m) { return Status(StatusCode::kInvalidConfig, std::move(m)); }
  static Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
  static Status Io(std::string m) { return Status(StatusCode::kIoError, std::move(m)); }
  static Status Unavailable(std::string m) {
    return Status(StatusCode::kUnavailable, std::move(m));
  }
  static Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Process exit code for this status (0, 1 or 2), see the header comment.
  int ExitCode() const;
  // Returns a copy with `prefix + ": "` prepended to the message.
  Status WithPrefix(const std::string& prefix) const;
  std::string ToString() const;

 private:
  Status(StatusCode c, std::string m) : code_(c), message_(std::move(m)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status s) : v_(std::move(s)) {}     // NOLINT: implicit by design
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

// A user-supplied value made safe to quote in a one-line error: control
// characters become escapes (\n, \t, \x01) and text past `max_bytes` is cut
// (at a UTF-8 character boundary) and marked with "...". Without this, a value
// with a newline splits the error and a 100 MB value becomes a 100 MB line.
std::string EchoValue(std::string_view value, size_t max_bytes = 80);

// The last line of defence for what main() prints: escapes control
// characters and caps the length, so every error is one bounded line.
std::string OneLine(std::string_view message, size_t max_bytes = 4096);

}  // namespace capplan

#define CAPPLAN_CONCAT_INNER(a, b) a##b
#define CAPPLAN_CONCAT(a, b) CAPPLAN_CONCAT_INNER(a, b)

#define CAPPLAN_RETURN_IF_ERROR(expr)           \
  do {                                          \
    ::capplan::Status _capplan_st = (expr);     \
    if (!_capplan_st.ok()) return _capplan_st;  \
  } while (0)

#define CAPPLAN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#define CAPPLAN_ASSIGN_OR_RETURN(lhs, expr) \
  CAPPLAN_ASSIGN_OR_RETURN_IMPL(CAPPLAN_CONCAT(_capplan_r_, __LINE__), lhs, expr)

#endif  // CAPPLAN_COMMON_STATUS_H_
