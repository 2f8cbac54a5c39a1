// File interface (in the spirit of leveldb's Env): readers and writers reach files only through
// these classes, so tests can run on in-memory files and inject truncation and I/O faults.
//
// FileSystem::Default() is the POSIX implementation: sequential reads are plain read(2) calls of
// the size the caller asks for (readers ask for large blocks, 512 KiB by default, and the POSIX
// file advises the kernel of sequential access). MemFileSystem keeps files in memory.
//
// Errors: opening a missing file throws Error(kNotFound); other OS failures throw or return
// Error/Status(kIo) naming the file and the byte offset.
// Thread-safety: a file object is used by one thread at a time; FileSystem methods are
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::io {

class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to n bytes into scratch. *bytes_read == 0 with an ok status means end of file;
  // fewer than n bytes does not by itself mean end of file.
  virtual Status Read(size_t n, char* scratch, size_t* bytes_read) = 0;
  // Skips n bytes (seeking where possible). Skipping past the end leaves the file at its end.
  virtual Status Skip(uint64_t n) = 0;
  // Path as given at open; used in error messages.
  virtual const std::string& name() const = 0;
};

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to n bytes at offset; fewer only at end of file. Safe to call concurrently.
  virtual Status Read(uint64_t offset, size_t n, char* scratch, size_t* bytes_read) const = 0;
  virtual const std::string& name() const = 0;
};

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  virtual Status Flush() = 0;
  // Flushes and closes; further calls fail. The destructor closes silently if needed.
  virtual Status Close() = 0;
  virtual const std::string& name() const = 0;
};

// A read-only mapping of a whole file: its bytes without a copy. The bytes stay valid while the
// object lives; if another process truncates the file meanwhile, touching the lost pages raises
// SIGBUS (the usual mmap caveat), which is why mapping is opt-in.
class MappedFile {
 public:
  virtual ~MappedFile() = default;
  virtual std::string_view data() const = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // The POSIX file system. Never null, lives for the whole process.
  static FileSystem* Default();

  // Throw Error(kNotFound) for a missing file, Error(kIo) otherwise.
  virtual std::unique_ptr<SequentialFile> NewSequentialFile(const std::string& path) = 0;
  virtual std::unique_ptr<RandomAccessFile> NewRandomAccessFile(const std::string& path) = 0;
  // Creates or truncates.
  virtual std::unique_ptr<WritableFile> NewWritableFile(const std::string& path) = 0;
  virtual uint64_t FileSize(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // A mapping of the whole file, or nullptr where this file system cannot map (the caller then
  // reads). Throws like NewSequentialFile.
  virtual std::unique_ptr<MappedFile> MapFile(const std::string& path) {
    (void)path;
    return nullptr;
  }
};

// In-memory files for tests. Files written through NewWritableFile appear when closed (and are
// visible while open). Faults: InjectReadError makes reads of `path` fail with kIo ("injected
// read error") at byte `offset`: a sequential read that reaches it returns the bytes before it
// (a short read) and the next read fails; a random read touching it fails.
class MemFileSystem : public FileSystem {
 public:
  void SetContents(const std::string& path, std::string contents);
  // Throws Error(kNotFound) if absent.
  std::string Contents(const std::string& path) const;
  void InjectReadError(const std::string& path, uint64_t offset);

  std::unique_ptr<SequentialFile> NewSequentialFile(const std::string& path) override;
  std::unique_ptr<RandomAccessFile> NewRandomAccessFile(const std::string& path) override;
  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path) override;
  uint64_t FileSize(const std::string& path) override;
  bool Exists(const std::string& path) override;

  struct Entry {
    std::string data;
    uint64_t fail_at = UINT64_MAX;
  };

 private:
  std::shared_ptr<Entry> Find(const std::string& path) const;

  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> files_ GUARDED_BY(mu_);
};

}  // namespace shardflow::io
