#include "core/error.hpp"

#include <sstream>

namespace shardflow {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kDataLoss:
      return "data loss";
    case ErrorCode::kIo:
      return "I/O error";
    case ErrorCode::kCommunication:
      return "communication error";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "unknown error";
}

int ExitCodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return 0;
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
      return 2;
    case ErrorCode::kDataLoss:
      return 3;
    default:
      return 1;
  }
}

std::string FormatContext(const ErrorContext& ctx) {
  std::ostringstream out;
  const char* sep = "";
  auto field = [&](const char* name, const auto& value) {
    out << sep << name << '=' << value;
    sep = " ";
  };
  if (!ctx.file.empty()) field("file", ctx.file);
  if (ctx.offset) field("offset", *ctx.offset);
  if (ctx.record) field("record", *ctx.record);
  if (ctx.rank) field("rank", *ctx.rank);
  if (!ctx.key.empty()) field("key", ctx.key);
  std::string fields = out.str();
  std::string result;
  if (!fields.empty()) result = " [" + fields + "]";
  if (!ctx.hint.empty()) result += " hint: " + ctx.hint;
  return result;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(ErrorCodeName(code_)) + ": " + message_ + FormatContext(context_);
}

Error::Error(ErrorCode code, const std::string& message, ErrorContext context)
    : Error(Status(code, message, std::move(context))) {}

Error::Error(Status status) : std::runtime_error(status.ToString()), status_(std::move(status)) {}

}  // namespace shardflow
