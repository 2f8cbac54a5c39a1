#include "apps/bench/bench_flags.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "comm/collectives.hpp"
#include "core/error.hpp"

namespace shardflow::bench {

size_t ParseBytes(const std::string& flag, const std::string& text) {
  try {
    size_t pos = 0;
    const double value = std::stod(text, &pos);
    double scale = 1;
    const std::string suffix = text.substr(pos);
    if (suffix == "K" || suffix == "KiB") {
      scale = 1024;
    } else if (suffix == "M" || suffix == "MiB") {
      scale = 1024.0 * 1024;
    } else if (suffix == "G" || suffix == "GiB") {
      scale = 1024.0 * 1024 * 1024;
    } else if (!suffix.empty()) {
      throw std::invalid_argument(suffix);
    }
    if (value < 0) throw std::invalid_argument(text);
    return static_cast<size_t>(value * scale);
  } catch (const std::exception&) {
    throw Error(ErrorCode::kInvalidArgument, "bad byte count '" + text + "' for " + flag,
                {.key = flag, .hint = "e.g. 4096, 64K, 16M"});
  }
}

int ParsePositive(const std::string& flag, const std::string& text) {
  try {
    size_t pos = 0;
    const int v = std::stoi(text, &pos);
    if (pos != text.size() || v <= 0) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    throw Error(ErrorCode::kInvalidArgument, "bad value '" + text + "' for " + flag,
                {.key = flag, .hint = "a positive integer"});
  }
}

bool ParsedOnEveryRank(comm::Communicator& comm, const std::function<void()>& parse) {
  std::string error;
  try {
    parse();
  } catch (const Error& e) {
    error = e.what();
  }
  const int64_t bad = error.empty() ? 0 : 1;
  if (comm::AllreduceInt64(comm, bad, comm::ReduceOp::kMax) == 0) return true;
  // The lowest failing rank's message (every rank parses the same flags, so usually rank 0's).
  const int64_t first =
      comm::AllreduceInt64(comm, bad ? comm.rank() : comm.size(), comm::ReduceOp::kMin);
  if (comm.rank() == first) std::fprintf(stderr, "error: %s\n", error.c_str());
  return false;
}

const std::string& FlagCursor::Value() {
  if (i_ + 1 >= args_.size()) {
    throw Error(ErrorCode::kInvalidArgument, flag() + " needs a value", {.key = flag()});
  }
  return args_[++i_];
}

void FlagCursor::Unknown() const {
  throw Error(ErrorCode::kInvalidArgument, "unknown flag '" + flag() + "'",
              {.hint = "shardflow-bench " + command_ + " --help lists the flags"});
}

std::vector<size_t> ParseByteList(const std::string& flag, const std::string& text) {
  std::vector<size_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(ParseBytes(flag, text.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}

}  // namespace shardflow::bench
