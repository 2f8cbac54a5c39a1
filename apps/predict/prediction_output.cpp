#include "apps/predict/prediction_output.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <vector>

#include "apps/predict/predict_config.hpp"
#include "comm/collectives.hpp"
#include "core/error.hpp"
#include "io/hdf5/objects.hpp"
#include "io/hdf5/writer.hpp"

namespace shardflow::predict {
namespace {

// Every rank's `mine`, concatenated in rank order, on rank 0 (empty elsewhere).
template <typename T>
std::vector<T> GatherRows(comm::Communicator& comm, const std::vector<T>& mine) {
  return comm::GatherConcat(comm, mine.data(), mine.size());
}

void WriteCsv(const std::string& path, const apps::PredictionRows& all, apps::Task task,
              bool labelled, bool sequence) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw Error(ErrorCode::kIo, "cannot create the output file", {.file = path});
  const int64_t k = all.num_classes;
  if (sequence) {
    std::fputs("id,loss,accuracy", f);
  } else if (task == apps::Task::kClassify) {
    std::fputs(labelled ? "id,label,class" : "id,class", f);
    for (int64_t j = 0; j < k; ++j) std::fprintf(f, ",p%lld", static_cast<long long>(j));
  } else {
    std::fputs("id,error", f);
  }
  std::fputc('\n', f);
  for (int64_t i = 0; i < all.rows(); ++i) {
    if (sequence) {
      std::fprintf(f, "%lld,%.9g,%.9g", static_cast<long long>(all.ids[i]), all.errors[i],
                   all.accuracies[i]);
    } else if (task == apps::Task::kClassify) {
      std::fprintf(f, "%lld,", static_cast<long long>(all.ids[i]));
      if (labelled) {
        if (all.labels[i] >= 0) std::fprintf(f, "%lld", static_cast<long long>(all.labels[i]));
        std::fputc(',', f);  // an unlabelled record's label is empty
      }
      std::fprintf(f, "%lld", static_cast<long long>(all.classes[i]));
      for (int64_t j = 0; j < k; ++j) std::fprintf(f, ",%.9g", all.probabilities[i * k + j]);
    } else {
      std::fprintf(f, "%lld,%.9g", static_cast<long long>(all.ids[i]), all.errors[i]);
    }
    std::fputc('\n', f);
  }
  const bool failed = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || failed) {
    throw Error(ErrorCode::kIo, "writing the output file failed", {.file = path});
  }
}

template <typename T>
Tensor RowsView(const std::vector<T>& values, Shape shape) {
  // Hdf5Writer only reads the rows; the view never writes through the pointer.
  return Tensor::View(const_cast<T*>(values.data()), DTypeOf<T>(), std::move(shape));
}

}  // namespace

apps::PredictionRows GatherSorted(comm::Communicator& comm, const apps::PredictionRows& mine,
                                  apps::Task task) {
  const int64_t k = mine.num_classes;
  apps::PredictionRows gathered;
  gathered.num_classes = k;
  gathered.ids = GatherRows(comm, mine.ids);
  gathered.sequence = mine.sequence;
  if (mine.sequence) {
    gathered.errors = GatherRows(comm, mine.errors);
    gathered.accuracies = GatherRows(comm, mine.accuracies);
  } else if (task == apps::Task::kClassify) {
    gathered.classes = GatherRows(comm, mine.classes);
    gathered.labels = GatherRows(comm, mine.labels);
    gathered.probabilities = GatherRows(comm, mine.probabilities);
  } else {
    gathered.errors = GatherRows(comm, mine.errors);
  }
  if (comm.rank() != 0) return gathered;

  // Sort a permutation by id, then apply it to every column.
  std::vector<int64_t> order(gathered.ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return gathered.ids[a] < gathered.ids[b]; });
  apps::PredictionRows sorted;
  sorted.num_classes = k;
  sorted.sequence = gathered.sequence;
  sorted.ids.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t id = gathered.ids[order[i]];
    if (i > 0 && id == sorted.ids.back()) {
      throw Error(ErrorCode::kDataLoss,
                  "record id " + std::to_string(id) +
                      " was predicted twice; the input holds duplicate ids (check "
                      "predict.id_feature) or overlapping files",
                  {.key = "id"});
    }
    sorted.ids.push_back(id);
    if (gathered.sequence) {
      sorted.errors.push_back(gathered.errors[order[i]]);
      sorted.accuracies.push_back(gathered.accuracies[order[i]]);
    } else if (task == apps::Task::kClassify) {
      sorted.classes.push_back(gathered.classes[order[i]]);
      sorted.labels.push_back(gathered.labels[order[i]]);
      const float* p = gathered.probabilities.data() + order[i] * k;
      sorted.probabilities.insert(sorted.probabilities.end(), p, p + k);
    } else {
      sorted.errors.push_back(gathered.errors[order[i]]);
    }
  }
  return sorted;
}

void WritePredictions(comm::Communicator& comm, const std::string& path,
                      const apps::PredictionRows& all, const PredictionFileInfo& info) {
  const int64_t total = info.total;
  const apps::Task task = info.task;
  const bool labelled = task == apps::Task::kClassify && info.labelled > 0 && !info.sequence;
  const int rank = comm.rank();
  if (rank == 0) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) {
      throw Error(ErrorCode::kIo, "cannot create the output directory: " + ec.message(),
                  {.file = parent.string()});
    }
  }
  if (!IsHdf5Output(path)) {
    if (rank == 0) WriteCsv(path, all, task, labelled, info.sequence);
    return;
  }
  comm::Barrier(comm);  // the directory exists before every rank opens the file
  const int64_t k = all.num_classes;
  const int64_t mine = rank == 0 ? all.rows() : 0;
  io::Hdf5Writer writer(path, comm.raw());
  writer.CreateDataset("ids", DType::kInt64, {total});
  writer.WriteRows("ids", 0, RowsView(all.ids, {mine}));
  if (info.sequence) {
    writer.CreateDataset("losses", DType::kFloat32, {total});
    writer.CreateDataset("accuracies", DType::kFloat32, {total});
    writer.WriteRows("losses", 0, RowsView(all.errors, {mine}));
    writer.WriteRows("accuracies", 0, RowsView(all.accuracies, {mine}));
  } else if (task == apps::Task::kClassify) {
    writer.CreateDataset("classes", DType::kInt64, {total});
    writer.CreateDataset("probabilities", DType::kFloat32, {total, k});
    writer.WriteRows("classes", 0, RowsView(all.classes, {mine}));
    writer.WriteRows("probabilities", 0, RowsView(all.probabilities, {mine, k}));
    if (labelled) {  // -1: a record without a label
      writer.CreateDataset("labels", DType::kInt64, {total});
      writer.WriteRows("labels", 0, RowsView(all.labels, {mine}));
    }
  } else {
    writer.CreateDataset("errors", DType::kFloat32, {total});
    writer.WriteRows("errors", 0, RowsView(all.errors, {mine}));
  }
  // What made the file (collective: every rank passes the same values).
  io::WriteAttribute(writer.file(), "/", "checkpoint", info.checkpoint);
  io::WriteAttribute(writer.file(), "/", "input", info.input);
  io::WriteAttribute(writer.file(), "/", "task",
                     std::string(info.sequence                   ? "sequence"
                                 : task == apps::Task::kClassify ? "classify"
                                                                 : "reconstruct"));
  io::WriteAttribute(writer.file(), "/", "records", total);
  writer.Close();
}

}  // namespace shardflow::predict
