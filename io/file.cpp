// POSIX and in-memory implementations of the file interface.
#include "io/file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shardflow::io {
namespace {

Status PosixError(const std::string& what, const std::string& path, int err,
                  std::optional<uint64_t> offset = std::nullopt) {
  const ErrorCode code = (err == ENOENT) ? ErrorCode::kNotFound : ErrorCode::kIo;
  return Status(code, what + ": " + std::strerror(err), {.file = path, .offset = offset});
}

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequentialFile() override { ::close(fd_); }

  Status Read(size_t n, char* scratch, size_t* bytes_read) override {
    *bytes_read = 0;
    while (true) {
      const ssize_t r = ::read(fd_, scratch, n);
      if (r >= 0) {
        *bytes_read = static_cast<size_t>(r);
        offset_ += static_cast<uint64_t>(r);
        return Status::Ok();
      }
      if (errno != EINTR) return PosixError("read failed", path_, errno, offset_);
    }
  }

  Status Skip(uint64_t n) override {
    const off_t pos = ::lseek(fd_, static_cast<off_t>(n), SEEK_CUR);
    if (pos < 0) return PosixError("seek failed", path_, errno, offset_);
    offset_ = static_cast<uint64_t>(pos);
    return Status::Ok();
  }

  const std::string& name() const override { return path_; }

 private:
  std::string path_;
  int fd_;
  uint64_t offset_ = 0;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, char* scratch, size_t* bytes_read) const override {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r == 0) break;
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("pread failed", path_, errno, offset + done);
      }
      done += static_cast<size_t>(r);
    }
    *bytes_read = done;
    return Status::Ok();
  }
  const std::string& name() const override { return path_; }

 private:
  std::string path_;
  int fd_;
};

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) (void)Close();
  }
  Status Append(std::string_view data) override {
    if (fd_ < 0) return Status(ErrorCode::kIo, "append to a closed file", {.file = path_});
    // Small appends are gathered into a buffer so a record (header, data, footer) costs one
    // write(2) per buffer, not three.
    if (buffer_.size() + data.size() > kBufferSize) {
      Status s = FlushBuffer();
      if (!s.ok()) return s;
    }
    if (data.size() >= kBufferSize) return WriteAll(data);
    buffer_.append(data);
    return Status::Ok();
  }
  Status Flush() override {
    if (fd_ < 0) return Status(ErrorCode::kIo, "flush of a closed file", {.file = path_});
    return FlushBuffer();
  }
  Status Close() override {
    if (fd_ < 0) return Status::Ok();
    Status s = FlushBuffer();
    if (::close(fd_) != 0 && s.ok()) s = PosixError("close failed", path_, errno, offset_);
    fd_ = -1;
    return s;
  }
  const std::string& name() const override { return path_; }

 private:
  static constexpr size_t kBufferSize = 1 << 20;
  Status FlushBuffer() {
    Status s = WriteAll(buffer_);
    buffer_.clear();
    return s;
  }
  Status WriteAll(std::string_view data) {
    while (!data.empty()) {
      const ssize_t w = ::write(fd_, data.data(), data.size());
      if (w < 0) {
        if (errno == EINTR) continue;
        return PosixError("write failed", path_, errno, offset_);
      }
      data.remove_prefix(static_cast<size_t>(w));
      offset_ += static_cast<uint64_t>(w);
    }
    return Status::Ok();
  }

  std::string path_;
  int fd_;
  uint64_t offset_ = 0;
  std::string buffer_;
};

class PosixMappedFile final : public MappedFile {
 public:
  PosixMappedFile(void* addr, size_t size) : addr_(addr), size_(size) {}
  ~PosixMappedFile() override {
    if (size_ > 0) ::munmap(addr_, size_);
  }
  std::string_view data() const override {
    return std::string_view(static_cast<const char*>(addr_), size_);
  }

 private:
  void* addr_;
  size_t size_;
};

class PosixFileSystem final : public FileSystem {
 public:
  std::unique_ptr<MappedFile> MapFile(const std::string& path) override {
    const int fd = OpenForRead(path);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      throw Error(PosixError("cannot stat file", path, err));
    }
    const auto size = static_cast<size_t>(st.st_size);
    void* addr = nullptr;
    if (size > 0) {
      addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (addr == MAP_FAILED) {
        ::close(fd);
        return nullptr;  // not mappable (e.g. a pipe): read it instead
      }
      // Sequential use: aggressive read-ahead, pages dropped behind us.
      (void)::madvise(addr, size, MADV_SEQUENTIAL);
      (void)::madvise(addr, size, MADV_WILLNEED);
    }
    ::close(fd);
    return std::make_unique<PosixMappedFile>(addr, size);
  }

  std::unique_ptr<SequentialFile> NewSequentialFile(const std::string& path) override {
    const int fd = OpenForRead(path);
#ifdef POSIX_FADV_SEQUENTIAL
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    return std::make_unique<PosixSequentialFile>(path, fd);
  }
  std::unique_ptr<RandomAccessFile> NewRandomAccessFile(const std::string& path) override {
    return std::make_unique<PosixRandomAccessFile>(path, OpenForRead(path));
  }
  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(PosixError("cannot create file", path, errno));
    return std::make_unique<PosixWritableFile>(path, fd);
  }
  uint64_t FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) throw Error(PosixError("cannot stat file", path, errno));
    return static_cast<uint64_t>(st.st_size);
  }
  bool Exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

 private:
  static int OpenForRead(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(PosixError("cannot open file", path, errno));
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      throw Error(ErrorCode::kInvalidArgument, "is a directory, not a file", {.file = path});
    }
    return fd;
  }
};

// ---------------------------------------------------------------------------------------------
// In memory.

Status InjectedError(const std::string& path, uint64_t offset) {
  return Status(ErrorCode::kIo, "injected read error", {.file = path, .offset = offset});
}

class MemSequentialFile final : public SequentialFile {
 public:
  MemSequentialFile(std::string path, std::shared_ptr<MemFileSystem::Entry> entry)
      : path_(std::move(path)), entry_(std::move(entry)) {}
  Status Read(size_t n, char* scratch, size_t* bytes_read) override {
    *bytes_read = 0;
    const uint64_t size = entry_->data.size();
    const uint64_t avail = pos_ < size ? size - pos_ : 0;
    size_t take = static_cast<size_t>(std::min<uint64_t>(n, avail));
    // Like a disk failing at a bad sector: a short read up to the fault, then the error.
    if (take > 0 && pos_ + take > entry_->fail_at) {
      if (pos_ >= entry_->fail_at) return InjectedError(path_, entry_->fail_at);
      take = static_cast<size_t>(entry_->fail_at - pos_);
    }
    std::memcpy(scratch, entry_->data.data() + pos_, take);
    pos_ += take;
    *bytes_read = take;
    return Status::Ok();
  }
  Status Skip(uint64_t n) override {
    pos_ = std::min<uint64_t>(pos_ + n, entry_->data.size());
    return Status::Ok();
  }
  const std::string& name() const override { return path_; }

 private:
  std::string path_;
  std::shared_ptr<MemFileSystem::Entry> entry_;
  uint64_t pos_ = 0;
};

class MemRandomAccessFile final : public RandomAccessFile {
 public:
  MemRandomAccessFile(std::string path, std::shared_ptr<MemFileSystem::Entry> entry)
      : path_(std::move(path)), entry_(std::move(entry)) {}
  Status Read(uint64_t offset, size_t n, char* scratch, size_t* bytes_read) const override {
    *bytes_read = 0;
    const uint64_t size = entry_->data.size();
    const uint64_t avail = offset < size ? size - offset : 0;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, avail));
    if (take > 0 && offset + take > entry_->fail_at) return InjectedError(path_, entry_->fail_at);
    std::memcpy(scratch, entry_->data.data() + offset, take);
    *bytes_read = take;
    return Status::Ok();
  }
  const std::string& name() const override { return path_; }

 private:
  std::string path_;
  std::shared_ptr<MemFileSystem::Entry> entry_;
};

class MemWritableFile final : public WritableFile {
 public:
  MemWritableFile(std::string path, std::shared_ptr<MemFileSystem::Entry> entry)
      : path_(std::move(path)), entry_(std::move(entry)) {}
  Status Append(std::string_view data) override {
    if (closed_) return Status(ErrorCode::kIo, "append to a closed file", {.file = path_});
    entry_->data.append(data);
    return Status::Ok();
  }
  Status Flush() override { return Status::Ok(); }
  Status Close() override {
    closed_ = true;
    return Status::Ok();
  }
  const std::string& name() const override { return path_; }

 private:
  std::string path_;
  std::shared_ptr<MemFileSystem::Entry> entry_;
  bool closed_ = false;
};

}  // namespace

FileSystem* FileSystem::Default() {
  static PosixFileSystem fs;
  return &fs;
}

void MemFileSystem::SetContents(const std::string& path, std::string contents) {
  MutexLock lock(mu_);
  auto entry = std::make_shared<Entry>();
  entry->data = std::move(contents);
  files_[path] = std::move(entry);
}

std::shared_ptr<MemFileSystem::Entry> MemFileSystem::Find(const std::string& path) const {
  MutexLock lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) {
    throw Error(ErrorCode::kNotFound, "cannot open file: No such file or directory",
                {.file = path});
  }
  return it->second;
}

std::string MemFileSystem::Contents(const std::string& path) const { return Find(path)->data; }

void MemFileSystem::InjectReadError(const std::string& path, uint64_t offset) {
  Find(path)->fail_at = offset;
}

std::unique_ptr<SequentialFile> MemFileSystem::NewSequentialFile(const std::string& path) {
  return std::make_unique<MemSequentialFile>(path, Find(path));
}
std::unique_ptr<RandomAccessFile> MemFileSystem::NewRandomAccessFile(const std::string& path) {
  return std::make_unique<MemRandomAccessFile>(path, Find(path));
}
std::unique_ptr<WritableFile> MemFileSystem::NewWritableFile(const std::string& path) {
  MutexLock lock(mu_);
  auto entry = std::make_shared<Entry>();
  files_[path] = entry;
  return std::make_unique<MemWritableFile>(path, entry);
}
uint64_t MemFileSystem::FileSize(const std::string& path) { return Find(path)->data.size(); }
bool MemFileSystem::Exists(const std::string& path) {
  MutexLock lock(mu_);
  return files_.count(path) != 0;
}

}  // namespace shardflow::io
