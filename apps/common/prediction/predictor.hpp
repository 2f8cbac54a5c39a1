// Runs a trained model over this rank's records and keeps one prediction row per record.
//
// The input dataset yields single records (elements with a leading batch dimension of 1, as
// the pipeline gives with batch_size 1), so every record carries its own element id; the
// predictor stacks `batch_size` of them into one model batch (a copy of their input and label
// rows), runs Forward in inference mode and appends, per record:
//   id:     the record's `id_feature` value when present and >= 0, else its index in the
//           global record order (PredictorSpec::record_index), else the element's id;
//   classify:    the argmax class (first maximum of the logits) and the softmax probabilities,
//                computed in double and stored as float32 (record_outputs.hpp);
//   reconstruct: the record's mean squared error between the model output and its input;
//   a sequence model (classify with an output (T, V) per record, a language model): the
//                record's mean cross-entropy over its positions against its per-position
//                labels (nats per token, in `errors`) and the fraction of positions whose
//                argmax is the label (`accuracies`); the labels are required.
// Labels (the label feature, when the records have it) are counted for accuracy (a sequence
// model: `labelled` counts positions, `correct` the right ones).
// A model split over ranks (pipeline stages, tensor ways) predicts through a ForwardFn: every
// rank of the model reads the same records, and the rank holding the output records the rows.
// Throws Error naming the feature and record for inputs the model cannot take.
// Thread-safety: none; one model per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apps/common/model_batch.hpp"
#include "core/model.hpp"
#include "io/pipeline/dataset.hpp"

namespace shardflow::apps {

struct PredictorSpec {
  BatchSpec batch;  // label_feature: used when the records have it
  Task task = Task::kClassify;
  std::string id_feature;  // "" : element ids only
  // The id of a record without an id feature, from its provenance (the global record index,
  // pipeline::MakeRecordNumbering); unset: the pipeline's element id.
  std::function<int64_t(const pipeline::Provenance&)> record_index;
  int64_t batch_size = 256;
};

// One rank's predictions, row i for record ids[i] (in the order the records were read).
struct PredictionRows {
  int64_t num_classes = 0;  // classify: K (columns of probabilities)
  std::vector<int64_t> ids;
  std::vector<int64_t> classes;      // classify
  std::vector<int64_t> labels;       // classify: each record's label, -1 where it has none
  std::vector<float> probabilities;  // classify: rows x K, row-major
  std::vector<float> errors;         // reconstruct; a sequence model: nats per token
  std::vector<float> accuracies;     // a sequence model: positions right / positions
  bool sequence = false;             // a sequence model's rows (errors and accuracies)
  int64_t labelled = 0;              // records with a label (a sequence model: positions)
  int64_t correct = 0;               // of those, predicted class == label
  double error_sum = 0;              // reconstruct, sequence: sum of errors

  int64_t rows() const { return static_cast<int64_t>(ids.size()); }
};

PredictionRows PredictDataset(Sequential<float>& model, const pipeline::Dataset& records,
                              const PredictorSpec& spec);

// A classifier served one class per record: its output per sample must be (K). A sequence
// model's (T, V) (a language model's next-token logits) is refused with
// Error(kInvalidArgument) naming `program` and the shape, rather than answered as T x V
// "classes" (shardflow-serve; shardflow-predict writes a sequence model's per-record loss).
void CheckOneClassPerRecord(Task task, const Shape& output_shape, const std::string& program);

// The same with the model's forward pass given as a function of a batch's input (B, ...): its
// output (B, output_shape...), or an empty tensor on a rank that computes no outputs (a
// pipeline's earlier stages, a tensor way other than 0): that rank records no rows. The
// function is called once per batch of records on every rank alike (a pipelined forward pass
// is collective over the model's ranks).
using ForwardFn = std::function<Tensor(const Tensor& x)>;
PredictionRows PredictDataset(const ForwardFn& forward, const Shape& output_shape,
                              const pipeline::Dataset& records, const PredictorSpec& spec);

}  // namespace shardflow::apps
