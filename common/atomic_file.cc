#include "common/atomic_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <streambuf>

#include "common/temp_files.h"

namespace capplan {

namespace fs = std::filesystem;

namespace {

// Paths are echoed in errors; a generated one can be arbitrarily long.
std::string Shown(const std::string& path) { return EchoValue(path, 256); }

// The file a write to `path` should replace: `path` itself, or the end of its
// chain of symbolic links, so that the link survives the rename.
Result<fs::path> ResolveLinks(const std::string& path) {
  fs::path p(path);
  // Linux's own limit on links followed in one lookup (ELOOP).
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (ec && st.type() != fs::file_type::not_found) {
      return Status::Io(Shown(path) + ": cannot write: " + ec.message());
    }
    if (st.type() != fs::file_type::symlink) return p;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) return Status::Io(Shown(path) + ": cannot read symbolic link: " + ec.message());
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return Status::Io(Shown(path) + ": cannot write: too many levels of symbolic links");
}

std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  return ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

std::string TempName(const std::string& target) { return target + TempSuffix(); }

// Writes `content` to a new file and flushes it to disk; "" or why not.
std::string WriteWhole(const std::string& path, std::string_view content) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return std::strerror(errno);
  const size_t n = std::fwrite(content.data(), 1, content.size(), f);
  bool ok = n == content.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  std::string err = ok ? "" : std::strerror(errno);
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = std::strerror(errno);
  }
  if (ok && InjectWriteFaults()) err = std::strerror(ENOSPC);
  return err;
}

// Has the kernel start writing a file's bytes [offset, offset + n) to
// disk, where it can be asked to. A failed hint changes nothing: the
// fsync still writes everything.
void StartWriteback([[maybe_unused]] int fd, [[maybe_unused]] int64_t offset,
                    [[maybe_unused]] int64_t n) {
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
  ::sync_file_range(fd, offset, n, SYNC_FILE_RANGE_WRITE);
#endif
}

// Passes what is written on to a file's stream buffer and, every
// kWritebackBytes, has the kernel start writing it to disk (Linux's
// sync_file_range, which only starts the writes): the fsync before the
// rename then waits for the last few MiB of a large file, not all of it
// (~85 ms for a 96 MB requests.csv).
class WritebackBuf : public std::streambuf {
 public:
  WritebackBuf(std::streambuf* file, int fd) : file_(file), fd_(fd) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const std::streamsize put = file_->sputn(s, n);
    Passed(put);
    return put;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const int_type put = file_->sputc(traits_type::to_char_type(c));
    if (!traits_type::eq_int_type(put, traits_type::eof())) Passed(1);
    return put;
  }
  int sync() override { return file_->pubsync(); }

 private:
  static constexpr int64_t kWritebackBytes = int64_t{8} << 20;

  void Passed(std::streamsize n) {
    passed_ += n;
    if (passed_ - started_ < kWritebackBytes) return;
    if (file_->pubsync() == 0) StartWriteback(fd_, started_, passed_ - started_);
    started_ = passed_;
  }

  std::streambuf* file_;
  int fd_;
  int64_t passed_ = 0;   // bytes passed on to file_
  int64_t started_ = 0;  // of those, the ones the kernel was asked to write
};

// Writes a new file through `writer` and flushes it to disk; "" or why not.
// `*failed` takes the writer's own error.
std::string WriteStreamed(const std::string& path, const StreamWriter& writer, Status* failed) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return std::strerror(errno);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  std::string err;
  {
    WritebackBuf buf(file.rdbuf(), fd);
    std::ostream os(&buf);
    *failed = writer(os);
    if (!failed->ok()) {
      err = "stopped";
    } else if (!os.flush()) {
      err = std::strerror(errno != 0 ? errno : EIO);
    }
  }
  if (err.empty()) {
    file.close();
    if (!file) err = std::strerror(errno != 0 ? errno : EIO);
  }
  if (err.empty() && ::fsync(fd) != 0) err = std::strerror(errno);
  ::close(fd);
  if (err.empty() && InjectWriteFaults()) return std::strerror(ENOSPC);
  return err;
}

}  // namespace

Status MakeDirs(const std::string& path) {
  if (path.empty()) return Status::Ok();
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Status::Io(Shown(path) + ": cannot create directory: " + ec.message());
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, std::string_view content) {
  CAPPLAN_ASSIGN_OR_RETURN(const fs::path p, ResolveLinks(path));
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (st.type() != fs::file_type::not_found && st.type() != fs::file_type::regular) {
    if (ec) return Status::Io(Shown(path) + ": cannot write: " + ec.message());
    return Status::Io(Shown(path) +
                      ": exists and is not a regular file (a directory, device, FIFO or "
                      "socket); choose a file path");
  }
  if (p.has_parent_path()) CAPPLAN_RETURN_IF_ERROR(MakeDirs(p.parent_path().string()));
  const std::string target = p.string();
  const std::string tmp = TempName(target);
  TempPath cleanup(tmp, /*is_dir=*/false);
  const std::string err = WriteWhole(tmp, content);
  if (!err.empty() || std::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = err.empty() ? std::strerror(errno) : err;
    std::remove(tmp.c_str());
    return Status::Io(Shown(path) + ": cannot write: " + why);
  }
  return Status::Ok();
}

Status WriteDirAtomic(const std::string& dir,
                      const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::pair<std::string, StreamWriter>> writers;
  for (const auto& [name, content] : files) {
    writers.emplace_back(name, [&content = content](std::ostream& os) {
      os.write(content.data(), static_cast<std::streamsize>(content.size()));
      return Status::Ok();
    });
  }
  return WriteDirAtomicStreamed(dir, writers);
}

Status WriteDirAtomicStreamed(const std::string& dir,
                              const std::vector<std::pair<std::string, StreamWriter>>& files) {
  CAPPLAN_ASSIGN_OR_RETURN(const fs::path p, ResolveLinks(dir));
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  const bool created = st.type() == fs::file_type::not_found;
  if (!created && st.type() != fs::file_type::directory) {
    if (ec) return Status::Io(Shown(dir) + ": cannot write: " + ec.message());
    return Status::Io(Shown(dir) + ": exists and is not a folder; choose a folder path");
  }
  for (const auto& [name, writer] : files) {
    const fs::file_status fst = fs::symlink_status(p / name, ec);
    if (fst.type() != fs::file_type::not_found && fst.type() != fs::file_type::regular) {
      return Status::Io(Shown((p / name).string()) +
                        ": exists and is not a regular file; choose another folder");
    }
  }
  CAPPLAN_RETURN_IF_ERROR(MakeDirs(p.string()));
  // Every file is written in full, as a hidden temporary next to its
  // target, before any target is touched: a full disk or an error fails
  // here, leaving the earlier files (and any others in the folder) as they
  // were, and a folder this call created is removed again (by an interrupt
  // too: registered before its files).
  std::vector<std::string> temps;
  std::vector<std::unique_ptr<TempPath>> cleanup;
  if (created) cleanup.push_back(std::make_unique<TempPath>(p.string(), /*is_dir=*/true));
  for (const auto& [name, writer] : files) {
    temps.push_back((p / ("." + name)).string() + TempSuffix());
    cleanup.push_back(std::make_unique<TempPath>(temps.back(), /*is_dir=*/false));
    Status failed;
    const std::string err = WriteStreamed(temps.back(), writer, &failed);
    if (!err.empty()) {
      for (const std::string& t : temps) std::remove(t.c_str());
      if (created) fs::remove(p, ec);
      if (!failed.ok()) return failed;
      return Status::Io(Shown(dir) + ": cannot write " + name + ": " + err);
    }
  }
  // Renames need no space. With SIGINT and SIGTERM held off (and the
  // temporaries no longer removed by the interrupt handler), Ctrl-C cannot
  // land between two of them.
  cleanup.clear();
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &block, &old);
  std::string err;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string target = (p / files[i].first).string();
    if (err.empty() && std::rename(temps[i].c_str(), target.c_str()) != 0) {
      err = files[i].first + ": " + std::strerror(errno);
    }
    if (!err.empty()) std::remove(temps[i].c_str());
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!err.empty()) return Status::Io(Shown(dir) + ": cannot write " + err);
  return Status::Ok();
}

Result<std::string> ReadFile(const std::string& path, int64_t max_bytes) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) {
    return Status::NotFound(Shown(path) + ": cannot open file (check the path)");
  }
  if (ec) return Status::NotFound(Shown(path) + ": cannot open file: " + ec.message());
  if (st.type() == fs::file_type::directory) {
    return Status::Usage(Shown(path) + ": is a directory; give a file");
  }
  // A FIFO would block until a writer comes, a device like /dev/zero never
  // ends: inputs must be regular files.
  if (st.type() != fs::file_type::regular) {
    return Status::Usage(Shown(path) +
                         ": not a regular file (a FIFO, device or socket cannot be an input)");
  }
  // O_NONBLOCK: should the path have become a FIFO since the check above,
  // open must not wait for a writer; fstat below then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::NotFound(Shown(path) + ": cannot open file: " + std::strerror(errno));
  struct stat sb {};
  const auto too_big = [&] {
    return Status::Usage(Shown(path) + ": larger than " + std::to_string(max_bytes >> 20) +
                         " MiB, the limit for this input");
  };
  if (::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    ::close(fd);
    return Status::Usage(Shown(path) + ": not a regular file");
  }
  if (sb.st_size > max_bytes) {
    ::close(fd);
    return too_big();
  }
  std::string out;
  out.reserve(static_cast<size_t>(sb.st_size));
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      return Status::Io(Shown(path) + ": cannot read: " + err);
    }
    if (n == 0) break;
    // The file may grow while it is read.
    if (static_cast<int64_t>(out.size()) + n > max_bytes) {
      ::close(fd);
      return too_big();
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace capplan
