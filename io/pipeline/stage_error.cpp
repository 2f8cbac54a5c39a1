#include "io/pipeline/stage_error.hpp"

#include <exception>

namespace shardflow::pipeline {

void RethrowInStage(const std::string& stage, const Provenance* where) {
  try {
    throw;
  } catch (const Error& e) {
    if (e.status().message().rfind("stage '", 0) == 0) throw;
    ErrorContext ctx = e.context();
    if (where != nullptr) {
      if (ctx.file.empty() && where->file) ctx.file = *where->file;
      if (!ctx.record && where->record >= 0) ctx.record = where->record;
    }
    throw Error(e.code(), "stage '" + stage + "': " + e.status().message(), ctx);
  } catch (const std::exception& e) {
    ErrorContext ctx = where != nullptr ? where->Context() : ErrorContext{};
    throw Error(ErrorCode::kInvalidArgument, "stage '" + stage + "': " + e.what(), ctx);
  }
}

}  // namespace shardflow::pipeline
