#pragma once
// What the safetensors and .npy readers and writers share about files: a read-only memory mapping
// (closed on destruction), a write that never leaves half a file behind, and the error they throw.
// POSIX only (open, fstat, mmap).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>

#include "../core/error.hpp"

namespace tenfold::io::detail {

// The files' data is little-endian and is copied to and from memory as it is.
static_assert(std::endian::native == std::endian::little,
              "tenfold::io: safetensors and .npy need a little-endian host");

// "<who>: <file>: <what>", the form of every error of io/.
[[noreturn]] inline void file_fail(const char* who, const std::string& file, const std::string& what) {
  throw tenfold::error(tenfold::detail::message(who, ": ", file, ": ", what));
}

// A whole regular file, mapped read-only. An empty file maps to an empty span (mmap refuses length 0).
// The mapping stays valid if the file is renamed or removed; truncating it meanwhile (another process)
// would make reads fault, as with any mmap reader.
class mapped_file {
 public:
  mapped_file(const char* who, const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) file_fail(who, path, tenfold::detail::message("cannot open: ", std::strerror(errno)));
    struct stat st {};
    const char* problem = nullptr;
    int err = 0;
    if (::fstat(fd, &st) != 0) err = errno;
    else if (S_ISDIR(st.st_mode)) problem = "is a directory, not a file";
    else if (!S_ISREG(st.st_mode)) problem = "not a regular file";
    else if (st.st_size > 0) {
      size_ = static_cast<std::size_t>(st.st_size);
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) err = errno, size_ = 0;
      else data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd); // the mapping keeps the file
    if (err) file_fail(who, path, tenfold::detail::message("cannot map: ", std::strerror(err)));
    if (problem) file_fail(who, path, problem);
  }
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  }

  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// Writes `path` + ".tmp", flushes it to disk, then renames it over `path`: a crash leaves either the old
// file or the new one, never a part. add() appends bytes; commit() finishes. Destroyed without commit()
// (an exception on the way), it removes the temporary file.
class atomic_file_writer {
 public:
  atomic_file_writer(const char* who, std::string path) : who_(who), path_(std::move(path)), tmp_(path_ + ".tmp") {
    file_ = std::fopen(tmp_.c_str(), "wb");
    if (!file_) fail("cannot create " + tmp_);
  }
  atomic_file_writer(const atomic_file_writer&) = delete;
  atomic_file_writer& operator=(const atomic_file_writer&) = delete;
  ~atomic_file_writer() {
    if (file_) {
      std::fclose(file_);
      std::remove(tmp_.c_str());
    }
  }

  void add(const void* data, std::size_t n) {
    if (n > 0 && std::fwrite(data, 1, n, file_) != n) fail("cannot write " + tmp_);
  }

  void commit() {
    if (std::fflush(file_) != 0) fail("cannot write " + tmp_);
    if (::fsync(::fileno(file_)) != 0) fail("cannot sync " + tmp_);
    const int closed = std::fclose(file_);
    file_ = nullptr;
    if (closed != 0) {
      const int err = errno;
      std::remove(tmp_.c_str());
      errno = err;
      fail("cannot write " + tmp_);
    }
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp_.c_str());
      errno = err;
      fail("cannot rename " + tmp_ + " to it");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    file_fail(who_, path_, tenfold::detail::message(what, ": ", std::strerror(errno)));
  }

  const char* who_;
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
};

} // namespace tenfold::io::detail
