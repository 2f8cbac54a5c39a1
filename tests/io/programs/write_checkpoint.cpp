// Writes, under mpiexec with any number of ranks, two checkpoints of the same small CNN with
// Adam state: DIR/whole by rank 0 alone (SaveCheckpoint) and DIR/collective by every rank
// (SaveCheckpointCollective) from uneven slices: rank 0 owns two slices, the last rank of
// several owns none, and every rank scrambles the parts of its arena and slots it does not
// own, so a slice written from the wrong range shows; and DIR/partitioned by every rank
// (SavePartitionedCheckpoint) from parts of the model: two pipeline stages of two
// tensor-parallel ways each on 4 ranks, one stage of two ways on 2, the whole model on 1 (the
// conv kernel and bias split over output channels, the dense kernel over rows, the rest
// replicated). Beside each file, expected.txt holds the
// file's path and one line per parameter, "<dataset path> <shape> <sum of elements>", for an
// independent HDF5 reader (h5py, tests/io/check_checkpoint_h5py.py) to check.
// Usage: mpiexec -np N write_checkpoint DIR
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>

#include "core/mpi_env.hpp"
#include "io/checkpoint/checkpoint.hpp"
#include "tests/io/checkpoint_part_util.hpp"

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

constexpr const char* kSpec = "conv:4:3x3:same, batchnorm, relu, maxpool:2, flatten, dense:10";

// This rank's part (see the file comment), holding `model`'s values.
std::string SavePart(const std::string& dir, Sequential<float>& model, Optimizer& opt,
                     const TrainingState& state, int rank, int size) {
  const int ways = size >= 2 ? 2 : 1, stages = size / ways, stage = rank / ways;
  Sequential<float> part(kSpec, {8, 8, 1}, {},
                         LayerRange{6 * stage / stages, 6 * (stage + 1) / stages});
  auto part_opt = MakeOptimizer({.name = "adam"}, part.arena().size());
  part_opt->set_iterations(opt.iterations());
  const std::vector<NamedTensor> slots = opt.Slots(), part_slots = part_opt->Slots();
  for (const ParamSpec& p : part.arena().specs()) {
    for (const ParamSpec& w : model.arena().specs()) {
      if (w.FullName() != p.FullName()) continue;
      std::copy_n(model.arena().params() + w.offset, w.size, part.arena().params() + p.offset);
      for (size_t k = 0; k < slots.size(); ++k) {
        std::copy_n(slots[k].tensor->data<float>() + w.offset, w.size,
                    part_slots[k].tensor->data<float>() + p.offset);
      }
    }
  }
  for (const NamedTensor& b : part.Buffers()) {
    for (const NamedTensor& w : model.Buffers()) {
      if (w.name == b.name) {
        std::copy_n(w.tensor->data<float>(), w.tensor->num_elements(), b.tensor->data<float>());
      }
    }
  }
  auto way = testing::Fabricate(
      part, *part_opt, {{"00_conv2d/kernel", 3}, {"00_conv2d/bias", 0}, {"05_dense/kernel", 0}},
      rank % ways, ways);
  return SavePartitionedCheckpoint({.dir = dir + "/partitioned"}, MPI_COMM_WORLD, way->part, state);
}

int Run(const std::string& dir, int rank, int size) {
  Sequential<float> model(kSpec, {8, 8, 1});
  auto opt = MakeOptimizer({.name = "adam"}, model.arena().size());
  for (int64_t i = 0; i < model.arena().size(); ++i) {
    model.arena().grads()[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  }
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
  const std::string partitioned = SavePart(dir, model, *opt, state, rank, size);
  if (rank == 0) WriteExpected(dir + "/partitioned", partitioned, model);
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
