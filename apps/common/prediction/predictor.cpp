#include "apps/common/prediction/predictor.hpp"

#include <cmath>
#include <cstring>

#include "apps/common/prediction/record_outputs.hpp"
#include "core/error.hpp"

namespace shardflow::apps {
namespace {

// Stacks feature `name` of `records` (each [1, row...]) into one tensor [n, row...].
Tensor StackFeature(const std::vector<pipeline::Element>& records, const std::string& name) {
  const Tensor& first = records.front().Get(name);
  if (first.rank() == 0 || first.dim(0) != 1) {
    ErrorContext ctx = records.front().where.Context();
    ctx.key = name;
    throw Error(
        ErrorCode::kInternal,
        "expected single-record elements, feature has shape " + ShapeToString(first.shape()), ctx);
  }
  Shape shape = first.shape();
  shape[0] = static_cast<int64_t>(records.size());
  Tensor out(first.dtype(), shape);
  const size_t row_bytes = first.byte_size();
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (size_t i = 0; i < records.size(); ++i) {
    const Tensor& t = records[i].Get(name);
    if (t.dtype() != first.dtype() || t.shape() != first.shape()) {
      ErrorContext ctx = records[i].where.Context();
      ctx.key = name;
      throw Error(ErrorCode::kInvalidArgument,
                  "feature has " + std::string(DTypeName(t.dtype())) + " " +
                      ShapeToString(t.shape()) + ", other records have " +
                      DTypeName(first.dtype()) + " " + ShapeToString(first.shape()),
                  ctx);
    }
    std::memcpy(dst + i * row_bytes, t.raw_data(), row_bytes);
  }
  return out;
}

int64_t RecordId(const pipeline::Element& record, const PredictorSpec& spec) {
  const std::string& id_feature = spec.id_feature;
  const auto fallback = [&] {
    return spec.record_index ? spec.record_index(record.where) : record.id;
  };
  if (id_feature.empty() || !record.Has(id_feature)) return fallback();
  const Tensor& t = record.Get(id_feature);
  if (t.dtype() != DType::kInt64 || t.num_elements() != 1) {
    ErrorContext ctx = record.where.Context();
    ctx.key = id_feature;
    throw Error(ErrorCode::kInvalidArgument,
                "id feature has " + std::string(DTypeName(t.dtype())) + " " +
                    ShapeToString(t.shape()) + ", expected one int64 per record",
                ctx);
  }
  const int64_t v = t.data<int64_t>()[0];
  return v >= 0 ? v : fallback();  // -1: the record has no id (the spec's default)
}

class BatchPredictor {
 public:
  BatchPredictor(const ForwardFn& forward, const PredictorSpec& spec, PredictionRows* rows)
      : forward_(forward), spec_(spec), rows_(rows) {}

  // A sequence model's rows: per record, the mean cross-entropy over its positions and the
  // fraction of them predicted right.
  void SequenceRows(const ModelBatch& mb, const Tensor& out, bool labelled,
                    const pipeline::Element& batch) {
    const int64_t n = mb.rows;
    const int64_t v = out.dim(out.rank() - 1), t = n > 0 ? out.num_elements() / (n * v) : 0;
    if (!labelled || mb.labels.num_elements() != n * t) {
      ErrorContext ctx = batch.where.Context();
      ctx.key = spec_.batch.label_feature;
      throw Error(ErrorCode::kInvalidArgument,
                  "a sequence model's per-record loss needs one label per position (" +
                      std::to_string(t) + "), the batch of " + std::to_string(n) + " records has " +
                      (labelled ? ShapeToString(mb.labels.shape()) : std::string("none")),
                  ctx);
    }
    const float* y = out.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      double loss = 0;
      int64_t right = 0;
      for (int64_t p = 0; p < t; ++p) {
        const float* row = y + (i * t + p) * v;
        const int64_t label = LabelAt(mb.labels, i * t + p);
        if (label < 0 || label >= v) {
          ErrorContext ctx = batch.where.Context();
          ctx.key = spec_.batch.label_feature;
          throw Error(ErrorCode::kInvalidArgument,
                      "label " + std::to_string(label) + " is outside the model's " +
                          std::to_string(v) + " classes",
                      ctx);
        }
        int64_t best = 0;
        double max = row[0];
        for (int64_t c = 1; c < v; ++c) {
          if (row[c] > max) max = row[c], best = c;
        }
        double sum = 0;
        for (int64_t c = 0; c < v; ++c) sum += std::exp(static_cast<double>(row[c]) - max);
        loss += max + std::log(sum) - row[label];
        right += best == label ? 1 : 0;
      }
      const double mean = t > 0 ? loss / static_cast<double>(t) : 0.0;
      rows_->errors.push_back(static_cast<float>(mean));
      rows_->accuracies.push_back(
          t > 0 ? static_cast<float>(static_cast<double>(right) / static_cast<double>(t)) : 0.f);
      rows_->error_sum += mean;
      rows_->labelled += t;
      rows_->correct += right;
    }
  }

  void Run(const std::vector<pipeline::Element>& records) {
    if (records.empty()) return;
    pipeline::Element batch;
    batch.id = records.front().id;
    batch.where = records.front().where;
    batch.Set(spec_.batch.input_feature, StackFeature(records, spec_.batch.input_feature));
    BatchSpec bspec = spec_.batch;
    const bool labelled = !bspec.label_feature.empty() && records.front().Has(bspec.label_feature);
    if (labelled) {
      batch.Set(bspec.label_feature, StackFeature(records, bspec.label_feature));
    } else {
      bspec.label_feature.clear();
    }
    const ModelBatch mb = ToModelBatch(batch, bspec, &scratch_);
    const Tensor out = forward_(mb.x).To(Device::kCpu);  // a model on a device: one copy back
    if (out.num_elements() == 0 && mb.rows > 0) return;  // another rank holds the outputs
    for (const auto& r : records) rows_->ids.push_back(RecordId(r, spec_));
    const int64_t n = mb.rows;
    const int64_t width = n > 0 ? out.num_elements() / n : 0;
    const float* y = out.data<float>();
    if (rows_->sequence) {
      SequenceRows(mb, out, labelled, batch);
    } else if (spec_.task == Task::kClassify) {
      rows_->num_classes = width;
      const size_t base = rows_->probabilities.size();
      rows_->probabilities.resize(base + static_cast<size_t>(n * width));
      for (int64_t i = 0; i < n; ++i) {
        const int64_t cls =
            SoftmaxRow(y + i * width, width, &rows_->probabilities[base + i * width]);
        rows_->classes.push_back(cls);
        rows_->labels.push_back(labelled ? LabelAt(mb.labels, i) : -1);
        if (labelled) {
          ++rows_->labelled;
          if (LabelAt(mb.labels, i) == cls) ++rows_->correct;
        }
      }
    } else {
      const int64_t in_width = n > 0 ? mb.x.num_elements() / n : 0;
      if (in_width != width) {
        throw Error(ErrorCode::kInvalidArgument,
                    "reconstruction output has " + std::to_string(width) +
                        " values per record, the input " + std::to_string(in_width),
                    batch.where.Context());
      }
      const float* x = mb.x.data<float>();
      for (int64_t i = 0; i < n; ++i) {
        const double err = ReconstructionError(y + i * width, x + i * width, width);
        rows_->errors.push_back(static_cast<float>(err));
        rows_->error_sum += err;
      }
    }
  }

 private:
  const ForwardFn& forward_;
  const PredictorSpec& spec_;
  PredictionRows* rows_;
  Tensor scratch_;
};

}  // namespace

PredictionRows PredictDataset(Sequential<float>& model, const pipeline::Dataset& records,
                              const PredictorSpec& spec) {
  return PredictDataset([&model](const Tensor& x) { return model.Forward(x, /*training=*/false); },
                        model.output_shape(), records, spec);
}

PredictionRows PredictDataset(const ForwardFn& forward, const Shape& output_shape,
                              const pipeline::Dataset& records, const PredictorSpec& spec) {
  PredictionRows rows;
  rows.sequence = spec.task == Task::kClassify && output_shape.size() == 2;
  if (spec.task == Task::kClassify && !rows.sequence) rows.num_classes = NumElements(output_shape);
  BatchPredictor predictor(forward, spec, &rows);
  std::vector<pipeline::Element> pending;
  pending.reserve(static_cast<size_t>(spec.batch_size));
  auto it = records.MakeIterator();
  pipeline::Element e;
  while (it.Next(&e)) {
    pending.push_back(std::move(e));
    e = pipeline::Element();
    if (static_cast<int64_t>(pending.size()) == spec.batch_size) {
      predictor.Run(pending);
      pending.clear();
    }
  }
  predictor.Run(pending);
  return rows;
}

void CheckOneClassPerRecord(Task task, const Shape& output_shape, const std::string& program) {
  if (task != Task::kClassify || output_shape.size() == 1) return;
  throw Error(ErrorCode::kInvalidArgument,
              program + " predicts one class per record, but the model's output per record is " +
                  ShapeToString(output_shape) +
                  " (a class per position, as a language model's next tokens)",
              {.key = "model.spec",
               .hint = "shardflow-predict writes a sequence model's loss per record, and "
                       "--generate samples a language model"});
}

}  // namespace shardflow::apps
