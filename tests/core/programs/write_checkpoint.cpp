// Writes a checkpoint of a small CNN with Adam state to DIR and, beside it, DIR/expected.txt
// with one line per parameter: "<dataset path> <shape> <sum of elements>", so an independent
// HDF5 reader (h5py) can check what it reads. Usage: write_checkpoint DIR
#include <cstdio>
#include <fstream>
#include <iomanip>

#include "core/checkpoint.hpp"

int main(int argc, char** argv) {
  using namespace shardflow;
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_checkpoint DIR\n");
    return 2;
  }
  try {
    Sequential<float> model("conv:4:3x3:same, batchnorm, relu, maxpool:2, flatten, dense:10",
                            {8, 8, 1});
    auto opt = MakeOptimizer({.name = "adam"}, model.arena().size());
    opt->Step(model.arena(), 0.001);
    const std::string path = SaveCheckpoint({.dir = argv[1]}, model, opt.get(),
                                            {.step = 7,
                                             .epoch = 2,
                                             .seed = 42,
                                             .iterator_state = {9, 8, 7},
                                             .config_text = "[model]\nname = cnn\n"});
    std::ofstream out(std::string(argv[1]) + "/expected.txt");
    out << path << "\n";
    for (const ParamSpec& s : model.arena().specs()) {
      double sum = 0;
      for (int64_t i = 0; i < s.size; ++i) sum += model.arena().params()[s.offset + i];
      out << "/params/" << s.FullName() << " " << ShapeToString(s.shape) << " "
          << std::setprecision(10) << sum << "\n";
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
