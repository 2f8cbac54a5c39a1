#include "apps/common/model_batch.hpp"

namespace shardflow::apps {

ModelBatch ToModelBatch(const pipeline::Element& batch, const BatchSpec& spec, Tensor* scratch) {
  const Tensor& in = batch.Get(spec.input_feature);
  ModelBatch out;
  out.rows = in.rank() == 0 ? 0 : in.dim(0);
  Shape shape = spec.input_shape;
  if (spec.shorter_sequences && shape.size() == 1 && in.rank() == 2 && in.dim(1) >= 1 &&
      in.dim(1) <= shape[0]) {
    shape[0] = in.dim(1);  // a batch padded to its longest sequence
  }
  const int64_t per_row = NumElements(shape);
  if (in.rank() == 0 || (out.rows > 0 && in.num_elements() != out.rows * per_row)) {
    ErrorContext ctx = batch.where.Context();
    ctx.key = spec.input_feature;
    throw Error(ErrorCode::kInvalidArgument,
                "input feature has shape " + ShapeToString(in.shape()) + ", expected " +
                    std::to_string(per_row) + " values per sample (model.input_shape " +
                    ShapeToString(spec.input_shape) + ")",
                ctx);
  }
  shape.insert(shape.begin(), out.rows);
  if (in.dtype() == DType::kFloat32) {
    out.x = in.Reshaped(shape);  // float inputs are the model's values: never scaled
  } else if (in.dtype() == DType::kUInt8) {
    if (scratch->shape() != shape || scratch->dtype() != DType::kFloat32) {
      *scratch = Tensor(DType::kFloat32, shape);
    }
    const uint8_t* src = in.data<uint8_t>();
    float* dst = scratch->data<float>();
    const float s = static_cast<float>(spec.scale);
    const int64_t n = in.num_elements();
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * s;
    out.x = *scratch;
  } else if (in.dtype() == DType::kInt64 || in.dtype() == DType::kInt32) {
    // Token ids (a tokenized input): exact in float32 below 2^24, never scaled.
    if (scratch->shape() != shape || scratch->dtype() != DType::kFloat32) {
      *scratch = Tensor(DType::kFloat32, shape);
    }
    float* dst = scratch->data<float>();
    const int64_t n = in.num_elements();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = in.dtype() == DType::kInt64 ? in.data<int64_t>()[i] : in.data<int32_t>()[i];
      if (v <= -(int64_t{1} << 24) || v >= (int64_t{1} << 24)) {
        ErrorContext ctx = batch.where.Context();
        ctx.key = spec.input_feature;
        throw Error(ErrorCode::kInvalidArgument,
                    "input value " + std::to_string(v) + " has no exact float32 (|v| >= 2^24)",
                    ctx);
      }
      dst[i] = static_cast<float>(v);
    }
    out.x = *scratch;
  } else {
    ErrorContext ctx = batch.where.Context();
    ctx.key = spec.input_feature;
    throw Error(ErrorCode::kInvalidArgument,
                std::string("input feature has dtype ") + DTypeName(in.dtype()) +
                    ", expected uint8, float32 or integer ids",
                ctx);
  }
  if (!spec.label_feature.empty()) {
    const Tensor& labels = batch.Get(spec.label_feature);
    // One label per sample, or a sequence model's one per position (B, S...).
    const bool per_sample = labels.num_elements() == out.rows;
    const bool per_position = labels.rank() >= 2 && labels.dim(0) == out.rows;
    if ((!per_sample && !per_position) || labels.dtype() == DType::kFloat32 ||
        labels.dtype() == DType::kFloat64) {
      ErrorContext ctx = batch.where.Context();
      ctx.key = spec.label_feature;
      throw Error(ErrorCode::kInvalidArgument,
                  "label feature has shape " + ShapeToString(labels.shape()) + " and dtype " +
                      DTypeName(labels.dtype()) + ", expected one integer label per sample (" +
                      std::to_string(out.rows) + ") or per position (" + std::to_string(out.rows) +
                      ", S...)",
                  ctx);
    }
    out.labels = per_sample ? labels.Reshaped({out.rows}) : labels;
  }
  return out;
}

pipeline::MapFn LabelRangeCheck(const std::string& label_feature, int64_t classes) {
  return [label_feature, classes](pipeline::Element& e, const pipeline::MapContext&) {
    if (!e.Has(label_feature)) return;
    const Tensor& t = e.Get(label_feature);
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      int64_t label = 0;
      if (t.dtype() == DType::kInt64) {
        label = t.data<int64_t>()[i];
      } else if (t.dtype() == DType::kInt32) {
        label = t.data<int32_t>()[i];
      } else {
        return;  // not integer: ToModelBatch names the dtype
      }
      if (label >= 0 && label < classes) continue;
      ErrorContext ctx = e.where.Context();
      ctx.key = label_feature;
      ctx.hint = "check the number of classes of the model's last layer";
      throw Error(ErrorCode::kInvalidArgument,
                  "label " + std::to_string(label) + " is outside [0, " + std::to_string(classes) +
                      "), the model's classes",
                  ctx);
    }
  };
}

std::string CheckAssembledInput(const pipeline::InputSpec& spec, const std::string& input_feature,
                                const Shape& input_shape) {
  const auto assembler = pipeline::MakeAssembler(spec.assemble, spec.features, spec.section);
  if (!assembler) return "";
  const std::string layout = assembler->LayoutText();
  if (input_feature != assembler->feature()) {
    throw Error(ErrorCode::kInvalidArgument,
                "the model reads '" + input_feature + "' but " + spec.section +
                    ".assemble makes '" + assembler->feature() + "'",
                {.key = "model.input_feature", .hint = layout});
  }
  if (NumElements(input_shape) != assembler->width()) {
    throw Error(ErrorCode::kInvalidArgument,
                "input_shape " + ShapeToString(input_shape) + " holds " +
                    std::to_string(NumElements(input_shape)) + " values, the assembled input " +
                    std::to_string(assembler->width()),
                {.key = "model.input_shape",
                 .hint = "input_shape = " + std::to_string(assembler->width()) + "; " + layout});
  }
  return layout;
}

void CheckTokenizedInput(const pipeline::InputSpec& spec, const std::string& input_feature,
                         const Shape& input_shape) {
  const pipeline::TextInputOptions& t = spec.text;
  if (!t.enabled()) return;
  const std::string& sec = spec.section;
  const std::string feature = t.packed() ? pipeline::kPackedInputFeature : pipeline::kTokensFeature;
  const int64_t context = t.packed() ? t.pack : t.max_tokens;
  const std::string key = t.packed() ? ".pack" : ".max_tokens";
  if (input_feature != feature) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "the model reads '" + input_feature + "' but " + sec + ".tokenizer makes '" + feature + "'",
        {.key = "model.input_feature", .hint = "input_feature = " + feature});
  }
  if (input_shape != Shape{context}) {
    throw Error(ErrorCode::kInvalidArgument,
                "input_shape " + ShapeToString(input_shape) + " is not " + sec + key + " = " +
                    std::to_string(context),
                {.key = "model.input_shape", .hint = "input_shape = " + std::to_string(context)});
  }
}

}  // namespace shardflow::apps
