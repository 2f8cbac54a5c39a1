#include "core/mpi_env.hpp"

#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/binding.hpp"
#include "core/check_mpi.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow {

MpiEnvironment::MpiEnvironment(int* argc, char*** argv) {
  int initialized = 0;
  SF_CHECK_MPI(MPI_Initialized(&initialized));
  if (!initialized) {
    SF_CHECK_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &thread_level_));
    owns_init_ = true;
  } else {
    SF_CHECK_MPI(MPI_Query_thread(&thread_level_));
  }
  // Errors come back as return codes and reach SF_CHECK_MPI, which adds context.
  SF_CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  SF_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  SF_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  SF_CHECK_MPI(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_));
  SF_CHECK_MPI(MPI_Comm_set_errhandler(node_comm_, MPI_ERRORS_RETURN));
  SF_CHECK_MPI(MPI_Comm_rank(node_comm_, &local_rank_));
  SF_CHECK_MPI(MPI_Comm_size(node_comm_, &local_size_));
  int leader = rank_;
  SF_CHECK_MPI(MPI_Bcast(&leader, 1, MPI_INT, 0, node_comm_));
  node_of_rank_.resize(static_cast<size_t>(size_));
  SF_CHECK_MPI(
      MPI_Allgather(&leader, 1, MPI_INT, node_of_rank_.data(), 1, MPI_INT, MPI_COMM_WORLD));
  SetLogRank(rank_);
  InitLoggingFromEnvironment();
}

MpiEnvironment::~MpiEnvironment() {
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_init_ && !finalized) MPI_Finalize();
}

int WorldRank() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

namespace {

void WriteErrorLine(const std::string& what) {
  const int rank = WorldRank();
  std::string line = (rank >= 0 ? "[rank " + std::to_string(rank) + "] " : std::string()) +
                     "error: " + what + "\n";
  // One write, so lines from different ranks never interleave.
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

// Maps the current exception to (message, exit code).
std::pair<std::string, int> DescribeCurrentException() {
  try {
    throw;
  } catch (const Error& e) {
    return {e.what(), ExitCodeFor(e.code())};
  } catch (const std::filesystem::filesystem_error& e) {
    // The operating system refused a file operation (permission denied, not a directory, no
    // space): an I/O error naming the path and errno, not an internal one.
    std::string what = e.what();
    const std::string prefix = "filesystem error: ";
    if (what.rfind(prefix, 0) == 0) what.erase(0, prefix.size());
    if (const size_t paths = what.find(" ["); paths != std::string::npos) what.erase(paths);
    what += " (errno " + std::to_string(e.code().value()) + ")";
    const Error error(ErrorCode::kIo, what, {.file = e.path1().string()});
    return {error.what(), ExitCodeFor(ErrorCode::kIo)};
  } catch (const std::exception& e) {
    return {std::string("internal error: ") + e.what(), 1};
  } catch (...) {
    return {"internal error: unknown exception", 1};
  }
}

// Every rank's binding, in rank order, on rank 0 (empty elsewhere). Collective over the world.
// Lengths travel as 64-bit values; a total beyond the int counts of the library's variable
// gather is refused before anything is cast.
std::vector<Binding> GatherBindings(const Binding& mine, int rank, int size) {
  const std::string text = SerializeBinding(mine);
  const uint64_t length = text.size();
  std::vector<uint64_t> lengths(rank == 0 ? static_cast<size_t>(size) : 0);
  SF_CHECK_MPI(
      MPI_Gather(&length, 1, MPI_UINT64_T, lengths.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
  uint64_t total = 0;
  for (uint64_t l : lengths) total += l;
  if (length > INT_MAX || total > INT_MAX) {
    throw Error(ErrorCode::kInvalidArgument, "binding descriptions exceed 2 GiB", {.rank = rank});
  }
  std::vector<int> counts(lengths.size()), displs(lengths.size());
  for (size_t i = 0, at = 0; i < lengths.size(); at += lengths[i], ++i) {
    counts[i] = static_cast<int>(lengths[i]);
    displs[i] = static_cast<int>(at);
  }
  std::string all(static_cast<size_t>(total), '\0');
  SF_CHECK_MPI(MPI_Gatherv(text.data(), static_cast<int>(length), MPI_CHAR, all.data(),
                           counts.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD));
  std::vector<Binding> out;
  for (size_t i = 0; i < lengths.size(); ++i) {
    out.push_back(ParseBinding(all.substr(static_cast<size_t>(displs[i]), lengths[i])));
  }
  return out;
}

bool EnvironmentFlag(const char* name) { return env::Flag(name); }

// SHARDFLOW_BINDING_REPORT / SHARDFLOW_BINDING_CHECK, set by slurm/launch.sh: rank 0 prints the
// binding table; with the check, shared GPUs or cores fail the start on every rank.
void ReportBinding(const MpiEnvironment& env) {
  const bool report = EnvironmentFlag("SHARDFLOW_BINDING_REPORT");
  const bool check = EnvironmentFlag("SHARDFLOW_BINDING_CHECK");
  if (!report && !check) return;
  const auto bindings =
      GatherBindings(CurrentBinding(env.rank(), env.local_rank()), env.rank(), env.size());
  std::string conflicts;
  if (env.rank() == 0) {
    if (report) std::fputs(FormatBindingTable(bindings).c_str(), stdout), std::fflush(stdout);
    for (const auto& c : FindBindingConflicts(bindings))
      conflicts += (conflicts.empty() ? "" : "; ") + c;
  }
  int bad = check && !conflicts.empty() ? 1 : 0;
  SF_CHECK_MPI(MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (bad && env.rank() == 0) {
    throw Error(
        ErrorCode::kInvalidArgument, "binding check failed: " + conflicts,
        {.hint = "give each rank its own GPU and cores (slurm/launch.sh, --ntasks-per-node)"});
  }
  if (bad) throw Error(ErrorCode::kInvalidArgument, "binding check failed (see rank 0)");
}

}  // namespace

void AbortJob(const char* what, int code) {
  WriteErrorLine(what);
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code == 0 ? 1 : code);
  std::_Exit(code == 0 ? 1 : code);
}

namespace {
thread_local int recovery_depth = 0;
}  // namespace

CollectiveRecovery::CollectiveRecovery() { ++recovery_depth; }
CollectiveRecovery::~CollectiveRecovery() { --recovery_depth; }

bool UnwindingAlone() {
  if (std::uncaught_exceptions() == 0 || recovery_depth > 0 || WorldRank() < 0) return false;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size > 1;
}

int RunMain(int argc, char** argv, const std::function<void(MpiEnvironment&)>& parse,
            const std::function<int(MpiEnvironment&)>& run) {
  std::unique_ptr<MpiEnvironment> env;
  try {
    env = std::make_unique<MpiEnvironment>(&argc, &argv);
  } catch (...) {
    auto [what, code] = DescribeCurrentException();
    WriteErrorLine(what);
    return code;
  }

  // Parse phase: every rank parses; they agree on the lowest failing rank, which alone prints.
  int exit_code = 0;
  std::string message;
  bool early_exit = false;
  try {
    ReportBinding(*env);
    parse(*env);
  } catch (const EarlyExit& e) {
    early_exit = true;
    exit_code = e.code;
  } catch (...) {
    std::tie(message, exit_code) = DescribeCurrentException();
  }
  int failing = message.empty() ? env->size() : env->rank();
  int first_failing = failing;
  MPI_Allreduce(&failing, &first_failing, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first_failing < env->size()) {
    if (env->rank() == first_failing) WriteErrorLine(message);
    // Every rank exits with the failing rank's code.
    MPI_Bcast(&exit_code, 1, MPI_INT, first_failing, MPI_COMM_WORLD);
    return exit_code == 0 ? 1 : exit_code;
  }
  if (early_exit) return exit_code;

  // Run phase: an error ends the whole job from the rank that hit it.
  try {
    return run(*env);
  } catch (const EarlyExit& e) {  // e.g. a subcommand's --help, seen alike by every rank
    return e.code;
  } catch (...) {
    auto [what, code] = DescribeCurrentException();
    if (env->size() == 1) {
      WriteErrorLine(what);
      return code;
    }
    AbortJob(what.c_str(), code);
  }
}

namespace internal {

// SF_CHECK_MPI's failure path (core/check_mpi.hpp): it lives here so that the MPI bootstrap is
// the one file of core that names MPI.
static_assert(MPI_SUCCESS == 0, "SF_CHECK_MPI compares against 0");

void ThrowMpiError(int rc, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) {
    std::snprintf(text, sizeof(text), "MPI error code %d", rc);
  }
  ErrorContext ctx;
  if (WorldRank() >= 0) ctx.rank = WorldRank();
  throw Error(ErrorCode::kCommunication,
              std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + text,
              std::move(ctx));
}

}  // namespace internal
}  // namespace shardflow
