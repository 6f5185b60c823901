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

}  // namespace capplan
