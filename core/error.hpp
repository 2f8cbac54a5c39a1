// Errors with context.
//
// Library code reports a failure as a shardflow::Error: a category (what kind of failure, which
// also decides the process exit code) plus a message and the context a user needs to find the
// problem: file, byte offset, record index, rank, config key and a hint. Example:
//
//   throw Error(ErrorCode::kDataLoss, "bad data CRC",
//               {.file = path, .offset = offset, .record = index});
//
// what() renders one line: "data loss: bad data CRC [file=a.tfrecord offset=1234 record=7]".
// Hot paths that expect failures (end of file, a corrupt record under on_corrupt=skip) return a
// Status instead of throwing; Status carries the same code, message and context.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace shardflow {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad user input: config value, flag, schema, shape
  kNotFound,         // missing file, dataset, feature, key
  kDataLoss,         // corrupt or truncated data
  kIo,               // the operating system refused a read or write
  kCommunication,    // MPI/NCCL failure, peer gone, collective timed out
  kInternal,         // a bug in shardflow
};

// "invalid argument", "not found", ...
const char* ErrorCodeName(ErrorCode code);

// Process exit code for an error of this category: 2 usage/invalid input, 3 data loss,
// 1 otherwise. Documented in the README; scripts rely on it.
int ExitCodeFor(ErrorCode code);

// Where an error happened. Every field is optional; only the ones set are printed.
struct ErrorContext {
  std::string file;
  std::optional<uint64_t> offset;  // byte offset in `file`
  std::optional<int64_t> record;   // record index in `file` (0-based)
  std::optional<int> rank;
  std::string key;   // config key, feature name, dataset name
  std::string hint;  // what to do about it
};

// Renders the context as " [file=... offset=... record=... rank=... key=...] hint: ...",
// or "" when nothing is set.
std::string FormatContext(const ErrorContext& ctx);

// The result of an operation that may fail in an expected way. Cheap when ok.
class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message, ErrorContext context = {})
      : code_(code), message_(std::move(message)), context_(std::move(context)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const ErrorContext& context() const { return context_; }
  ErrorContext& mutable_context() { return context_; }

  // "data loss: bad data CRC [file=a.tfrecord offset=12]"; "ok" when ok().
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  ErrorContext context_;
};

// The exception library code throws. what() is the one-line rendering of the Status.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message, ErrorContext context = {});
  explicit Error(Status status);

  ErrorCode code() const { return status_.code(); }
  const Status& status() const { return status_; }
  const ErrorContext& context() const { return status_.context(); }

 private:
  Status status_;
};

// Throws Error(status) unless status.ok().
inline void ThrowIfError(Status status) {
  if (!status.ok()) throw Error(std::move(status));
}

}  // namespace shardflow
