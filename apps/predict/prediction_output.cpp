#include "apps/predict/prediction_output.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <vector>

#include "apps/predict/predict_config.hpp"
#include "core/check_mpi.hpp"
#include "core/error.hpp"
#include "io/hdf5_writer.hpp"

namespace shardflow::predict {
namespace {

// MPI_Gatherv of `mine` (width values per row) to rank 0.
template <typename T>
std::vector<T> GatherRows(MPI_Comm comm, const std::vector<T>& mine, MPI_Datatype type,
                          const std::vector<int64_t>& counts, int64_t width) {
  int rank = 0;
  SF_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  std::vector<int> recv_counts(counts.size()), displs(counts.size());
  int64_t offset = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    const int64_t n = counts[r] * width;
    if (offset + n > INT_MAX) {
      throw Error(ErrorCode::kInvalidArgument, "too many predictions to gather on rank 0 (" +
                                                   std::to_string(offset + n) +
                                                   " values); split the input into several runs");
    }
    recv_counts[r] = static_cast<int>(n);
    displs[r] = static_cast<int>(offset);
    offset += n;
  }
  std::vector<T> all(rank == 0 ? static_cast<size_t>(offset) : 0);
  SF_CHECK_MPI(MPI_Gatherv(mine.data(), static_cast<int>(mine.size()), type, all.data(),
                           recv_counts.data(), displs.data(), type, 0, comm));
  return all;
}

void WriteCsv(const std::string& path, const PredictionRows& all, apps::Task task) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw Error(ErrorCode::kIo, "cannot create the output file", {.file = path});
  const int64_t k = all.num_classes;
  if (task == apps::Task::kClassify) {
    std::fputs("id,class", f);
    for (int64_t j = 0; j < k; ++j) std::fprintf(f, ",p%lld", static_cast<long long>(j));
  } else {
    std::fputs("id,error", f);
  }
  std::fputc('\n', f);
  for (int64_t i = 0; i < all.rows(); ++i) {
    if (task == apps::Task::kClassify) {
      std::fprintf(f, "%lld,%lld", static_cast<long long>(all.ids[i]),
                   static_cast<long long>(all.classes[i]));
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

PredictionRows GatherSorted(MPI_Comm comm, const PredictionRows& mine, apps::Task task) {
  int rank = 0, size = 1;
  SF_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  SF_CHECK_MPI(MPI_Comm_size(comm, &size));
  int64_t n = mine.rows();
  std::vector<int64_t> counts(static_cast<size_t>(size));
  SF_CHECK_MPI(MPI_Allgather(&n, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, comm));
  const int64_t k = mine.num_classes;

  PredictionRows gathered;
  gathered.num_classes = k;
  gathered.ids = GatherRows(comm, mine.ids, MPI_INT64_T, counts, 1);
  if (task == apps::Task::kClassify) {
    gathered.classes = GatherRows(comm, mine.classes, MPI_INT64_T, counts, 1);
    gathered.probabilities = GatherRows(comm, mine.probabilities, MPI_FLOAT, counts, k);
  } else {
    gathered.errors = GatherRows(comm, mine.errors, MPI_FLOAT, counts, 1);
  }
  if (rank != 0) return gathered;

  // Sort a permutation by id, then apply it to every column.
  std::vector<int64_t> order(gathered.ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return gathered.ids[a] < gathered.ids[b]; });
  PredictionRows sorted;
  sorted.num_classes = k;
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
    if (task == apps::Task::kClassify) {
      sorted.classes.push_back(gathered.classes[order[i]]);
      const float* p = gathered.probabilities.data() + order[i] * k;
      sorted.probabilities.insert(sorted.probabilities.end(), p, p + k);
    } else {
      sorted.errors.push_back(gathered.errors[order[i]]);
    }
  }
  return sorted;
}

void WritePredictions(MPI_Comm comm, const std::string& path, const PredictionRows& all,
                      int64_t total, apps::Task task) {
  int rank = 0;
  SF_CHECK_MPI(MPI_Comm_rank(comm, &rank));
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
    if (rank == 0) WriteCsv(path, all, task);
    return;
  }
  SF_CHECK_MPI(MPI_Barrier(comm));  // the directory exists before every rank opens the file
  const int64_t k = all.num_classes;
  const int64_t mine = rank == 0 ? all.rows() : 0;
  io::Hdf5Writer writer(path, comm);
  writer.CreateDataset("ids", DType::kInt64, {total});
  writer.WriteRows("ids", 0, RowsView(all.ids, {mine}));
  if (task == apps::Task::kClassify) {
    writer.CreateDataset("classes", DType::kInt64, {total});
    writer.CreateDataset("probabilities", DType::kFloat32, {total, k});
    writer.WriteRows("classes", 0, RowsView(all.classes, {mine}));
    writer.WriteRows("probabilities", 0, RowsView(all.probabilities, {mine, k}));
  } else {
    writer.CreateDataset("errors", DType::kFloat32, {total});
    writer.WriteRows("errors", 0, RowsView(all.errors, {mine}));
  }
  writer.Close();
}

}  // namespace shardflow::predict
