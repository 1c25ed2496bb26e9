#include "sim/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "sim/error.h"

namespace bubblesim::sim {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw Error(path + ": " + why);
}

// `path` with every symlink along the last component followed (at most 40, as the kernel).
std::string resolve_links(const std::string& path) {
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p.string();
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) fail(path, "cannot read the symbolic link (" + ec.message() + ")");
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  fail(path, "too many levels of symbolic links");
}

// Creates an empty file named after `pattern` (ending in XXXXXX) and returns its name.
std::string make_temporary(const std::string& path, std::string pattern) {
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0)
    fail(path, std::string("cannot create a file beside it (") + std::strerror(errno) + ")");
  // mkstemp makes 0600; a new output gets what the umask allows, as any new file.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  return name.data();
}

}  // namespace

OutputFile::OutputFile(const std::string& path) : path_(path) {
  if (path.empty()) throw Error("expected a file name, got an empty one");
  target_ = resolve_links(path);
  struct stat st {};
  if (::stat(target_.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a regular file");
    if (S_ISREG(st.st_mode)) {
      existing_regular_ = true;
      if (::access(target_.c_str(), W_OK) != 0 || (st.st_mode & 0222) == 0) {
        fail(path, "the file is read-only; refusing to replace it");
      }
    } else {
      special_ = true;
    }
  } else if (errno != ENOENT) {
    fail(path, std::strerror(errno));
  }
  if (special_) {
    std::error_code ec;
    fs::path folder = fs::temp_directory_path(ec);
    if (ec) folder = "/tmp";
    temporary_ = make_temporary(path, (folder / "bubblesim-output-XXXXXX").string());
    return;
  }
  const fs::path target(target_);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    fail(path, "its folder " + folder.string() + " does not exist");
  // Built by appends: GCC 12's -Wrestrict misreads `"." + std::string&&` (a false positive).
  std::string name = ".";
  name += target.filename().string();
  name += ".bubblesim-XXXXXX";
  temporary_ = make_temporary(path, (folder / name).string());
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      target_(std::move(other.target_)),
      temporary_(std::move(other.temporary_)),
      existing_regular_(other.existing_regular_),
      special_(other.special_),
      done_(other.done_) {
  other.done_ = true;
  other.temporary_.clear();
}

OutputFile::~OutputFile() {
  if (!done_ && !temporary_.empty()) std::remove(temporary_.c_str());
}

void OutputFile::commit() {
  BUBBLESIM_CHECK(!done_, "an output committed twice");
  done_ = true;
  const auto failed = [&](const std::string& why) {
    std::remove(temporary_.c_str());
    fail(path_, "cannot write the file (" + why + ")");
  };
  if (!special_) {
    struct stat st {};
    if (existing_regular_ && ::stat(target_.c_str(), &st) == 0) {
      ::chmod(temporary_.c_str(), st.st_mode & 07777);  // the new file keeps who may read it
    }
    if (std::rename(temporary_.c_str(), target_.c_str()) != 0) failed(std::strerror(errno));
    return;
  }
  // A device or pipe: written into, never replaced.
  const int in = ::open(temporary_.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) failed(std::strerror(errno));
  const int out = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
  if (out < 0) {
    const int e = errno;
    ::close(in);
    failed(std::strerror(e));
  }
  std::vector<char> buffer(1 << 16);
  bool ok = true;
  for (;;) {
    const ssize_t n = ::read(in, buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    for (ssize_t at = 0; at < n;) {
      const ssize_t w = ::write(out, buffer.data() + at, static_cast<std::size_t>(n - at));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        ok = false;
        break;
      }
      at += w;
    }
    if (!ok) break;
  }
  const int e = errno;
  ::close(in);
  if (::close(out) != 0 && ok) ok = false;
  if (!ok) failed(std::strerror(e));
  std::remove(temporary_.c_str());
}

void check_distinct_outputs(const OutputFile& a, const char* option_a, const OutputFile& b,
                            const char* option_b) {
  if (a.writes_into_special_file() && b.writes_into_special_file()) return;  // /dev/null twice
  std::error_code ec;
  const bool same = a.target() == b.target() ||
                    (fs::exists(a.target(), ec) && fs::equivalent(a.target(), b.target(), ec));
  if (same) {
    throw InvalidArgument(std::string("options ") + option_a + " and " + option_b +
                          ": both write " + a.path() + "; give two different files");
  }
}

}  // namespace bubblesim::sim
