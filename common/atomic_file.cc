#include "common/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace capplan {

Status MakeDirs(const std::string& path) {
  if (path.empty()) return Status::Ok();
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::Io(path + ": cannot create directory: " + ec.message());
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, std::string_view content) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) CAPPLAN_RETURN_IF_ERROR(MakeDirs(p.parent_path().string()));
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Status::Io(path + ": cannot write: " + std::strerror(errno));
  const size_t n = std::fwrite(content.data(), 1, content.size(), f);
  const bool ok = n == content.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  std::fclose(f);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::Io(path + ": cannot write: " + err);
  }
  return Status::Ok();
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open file (check the path)");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace capplan
