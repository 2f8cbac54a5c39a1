// Writes, under mpiexec with any number of ranks, two checkpoints of the same small CNN with
// Adam state: DIR/whole by rank 0 alone (SaveCheckpoint) and DIR/collective by every rank
// (SaveCheckpointCollective) from uneven slices: rank 0 owns two slices, the last rank of
// several owns none, and every rank scrambles the parts of its arena and slots it does not
// own, so a slice written from the wrong range shows. Beside each file, expected.txt holds the
// file's path and one line per parameter, "<dataset path> <shape> <sum of elements>", for an
// independent HDF5 reader (h5py, tests/io/check_checkpoint_h5py.py) to check.
// Usage: mpiexec -np N write_checkpoint DIR
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>

#include "core/mpi_env.hpp"
#include "io/checkpoint.hpp"

namespace {

using namespace shardflow;

// Rank `rank` of `size`'s slices of an arena of n elements (see the file comment).
std::vector<ArenaSlice> Slices(int64_t n, int rank, int size) {
  const int64_t tail = n / 7;
  const int owners = size > 1 ? size - 1 : 1;
  // Owner r gets a share proportional to r + 1 of [0, n - tail).
  auto boundary = [&](int64_t r) {
    return (n - tail) * (r * (r + 1) / 2) / (owners * (owners + 1) / 2);
  };
  std::vector<ArenaSlice> out;
  if (rank < owners) out.push_back({boundary(rank), boundary(rank + 1) - boundary(rank)});
  if (rank == 0) out.push_back({n - tail, tail});
  return out;
}

void Scramble(float* data, int64_t n, const std::vector<ArenaSlice>& owned, int rank) {
  std::vector<bool> mine(static_cast<size_t>(n), false);
  for (const ArenaSlice& s : owned) {
    for (int64_t i = s.offset; i < s.offset + s.size; ++i) mine[static_cast<size_t>(i)] = true;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!mine[static_cast<size_t>(i)]) data[i] = static_cast<float>(-1000 - rank);
  }
}

void WriteExpected(const std::string& dir, const std::string& path, Sequential<float>& model) {
  std::ofstream out(dir + "/expected.txt");
  out << path << "\n";
  for (const ParamSpec& s : model.arena().specs()) {
    double sum = 0;
    for (int64_t i = 0; i < s.size; ++i) sum += model.arena().params()[s.offset + i];
    out << "/params/" << s.FullName() << " " << ShapeToString(s.shape) << " "
        << std::setprecision(10) << sum << "\n";
  }
}

int Run(const std::string& dir, int rank, int size) {
  Sequential<float> model("conv:4:3x3:same, batchnorm, relu, maxpool:2, flatten, dense:10",
                          {8, 8, 1});
  auto opt = MakeOptimizer({.name = "adam"}, model.arena().size());
  opt->Step(model.arena(), 0.001);
  const TrainingState state{.step = 7,
                            .epoch = 2,
                            .seed = 42,
                            .rng = {11, 12},
                            .iterator_state = {9, 8, 7},
                            .config_text = "[model]\nname = cnn\n"};
  if (rank == 0) {
    std::filesystem::create_directories(dir);
    const std::string path = SaveCheckpoint({.dir = dir + "/whole"}, model, opt.get(), state);
    WriteExpected(dir + "/whole", path, model);
  }
  const std::vector<ArenaSlice> owned = Slices(model.arena().size(), rank, size);
  std::vector<float> params(model.arena().params(), model.arena().params() + model.arena().size());
  Scramble(model.arena().params(), model.arena().size(), owned, rank);
  for (const NamedTensor& s : opt->Slots()) {
    Scramble(s.tensor->data<float>(), s.tensor->num_elements(), owned, rank);
  }
  const std::string path = SaveCheckpointCollective({.dir = dir + "/collective"}, MPI_COMM_WORLD,
                                                    model, opt.get(), state, owned);
  if (rank == 0) {
    std::copy(params.begin(), params.end(), model.arena().params());
    WriteExpected(dir + "/collective", path, model);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  return RunMain(
      argc, argv,
      [&](MpiEnvironment&) {
        if (argc != 2) throw Error(ErrorCode::kInvalidArgument, "usage: write_checkpoint DIR");
        dir = argv[1];
      },
      [&](MpiEnvironment& env) { return Run(dir, env.rank(), env.size()); });
}
