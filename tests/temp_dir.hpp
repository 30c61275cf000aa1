#pragma once
// A directory of this test program's own under the system's temporary directory, made on first use and
// removed, with what was written into it, when the program exits. The file readers' tests write their
// inputs there (each run of each case used to leave its directory behind: 330 of them in /tmp after a
// day of test runs).
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace tenfold_test {
class temp_directory {
 public:
  explicit temp_directory(const std::string& prefix)
      : path_(std::filesystem::temp_directory_path() / (prefix + "_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~temp_directory() {
    std::error_code ignored; // (nothing to do about a file that cannot be removed at exit)
    std::filesystem::remove_all(path_, ignored);
  }
  temp_directory(const temp_directory&) = delete;
  temp_directory& operator=(const temp_directory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};
} // namespace tenfold_test
