// batch, padded_batch and unbatch.
#include <algorithm>
#include <cstring>

#include "io/pipeline/batch_buffer.hpp"
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {

std::string PaddingText(const PaddedBatchOptions& o) {
  std::string d;
  for (const auto& [name, shape] : o.padded_shapes) d += "," + name + ShapeToString(shape);
  for (const auto& [name, value] : o.padding_values) {
    d.append(",").append(name).append("=").append(std::to_string(value));
  }
  for (const auto& name : o.masks) d.append(",mask:").append(name);
  return d;
}

namespace {

// ---- batch and padded_batch ----

class BatchNode : public DatasetNode {
 public:
  BatchNode(NodePtr input, int64_t size, bool drop, bool padded, PaddedBatchOptions pad)
      : input_(std::move(input)), size_(size), drop_(drop), padded_(padded), pad_(std::move(pad)) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    std::string d = std::string(padded_ ? "padded_batch(" : "batch(") + std::to_string(size_) +
                    (drop_ ? ",drop" : "");
    if (padded_) {
      d += ",pad=" + std::to_string(pad_.padding_value);
      d += PaddingText(pad_);
    }
    return d + ")<-" + input_->Describe();
  }
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (n < 0) return n;
    return drop_ ? n / size_ : (n + size_ - 1) / size_;
  }
  NodePtr input_;
  int64_t size_;
  bool drop_, padded_;
  PaddedBatchOptions pad_;
};

template <typename T>
void FillValue(Tensor& t, double value) {
  std::fill_n(t.data<T>(), t.num_elements(), static_cast<T>(value));
}

void Fill(Tensor& t, double value) {
  switch (t.dtype()) {
    case DType::kFloat32:
      return FillValue<float>(t, value);
    case DType::kFloat64:
      return FillValue<double>(t, value);
    case DType::kUInt8:
      return FillValue<uint8_t>(t, value);
    case DType::kInt32:
      return FillValue<int32_t>(t, value);
    case DType::kInt64:
      return FillValue<int64_t>(t, value);
  }
}

// Copies src (shape s) into the top-left corner of row `slot` of dst (shape [B, padded...]).
void CopyPadded(const Tensor& src, Tensor& dst, int64_t slot) {
  const size_t elem = DTypeSize(src.dtype());
  const Shape& s = src.shape();
  Shape d(dst.shape().begin() + 1, dst.shape().end());
  const int64_t rows_total = NumElements(d);
  char* base = static_cast<char*>(dst.raw_data()) + slot * rows_total * elem;
  if (s.empty()) {
    std::memcpy(base, src.raw_data(), elem);
    return;
  }
  // Copy the innermost dimension as contiguous runs; iterate the outer index space of src.
  const int64_t inner = s.back();
  const int64_t outer = inner == 0 ? 0 : src.num_elements() / inner;
  std::vector<int64_t> idx(s.size() - 1, 0);
  const char* from = static_cast<const char*>(src.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    int64_t offset = 0;
    for (size_t k = 0; k < idx.size(); ++k) offset = offset * d[k] + idx[k];
    offset *= d.back();
    std::memcpy(base + offset * elem, from + o * inner * elem, inner * elem);
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < s[k]) break;
      idx[k] = 0;
    }
  }
}

// The shape feature `name` pads to: the largest of the elements', overridden by the
// feature's padded shape (-1 dimensions keep the largest).
Shape PaddedShape(const std::vector<Element>& elements, const std::string& name,
                  const PaddedBatchOptions& options, const std::string& stage) {
  const Tensor& first = elements[0].Get(name);
  Shape target(first.rank(), 0);
  for (const auto& el : elements) {
    const Tensor* t = nullptr;
    try {
      t = &el.Get(name);
    } catch (...) {
      RethrowInStage(stage, &el.where);
    }
    if (t->rank() != first.rank() || t->dtype() != first.dtype()) {
      ErrorContext ctx = el.where.Context();
      ctx.key = name;
      throw Error(ErrorCode::kInvalidArgument,
                  "stage '" + stage + "': feature '" + name + "' changes rank or dtype (" +
                      ShapeToString(t->shape()) + " vs " + ShapeToString(first.shape()) + ")",
                  ctx);
    }
    for (size_t k = 0; k < target.size(); ++k) target[k] = std::max(target[k], t->dim(k));
  }
  for (const auto& [pname, pshape] : options.padded_shapes) {
    if (pname != name) continue;
    if (pshape.size() != target.size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "stage '" + stage + "': padded shape " + ShapeToString(pshape) +
                      " has the wrong rank for feature '" + name + "'",
                  {.key = name});
    }
    for (size_t k = 0; k < target.size(); ++k) {
      if (pshape[k] < 0) continue;
      if (pshape[k] < target[k]) {
        throw Error(ErrorCode::kInvalidArgument,
                    "stage '" + stage + "': feature '" + name + "' dimension " + std::to_string(k) +
                        " is " + std::to_string(target[k]) + ", larger than its padded shape " +
                        ShapeToString(pshape),
                    {.key = name});
      }
      target[k] = pshape[k];
    }
  }
  return target;
}

double PaddingValue(const PaddedBatchOptions& options, const std::string& name) {
  for (const auto& [pname, value] : options.padding_values) {
    if (pname == name) return value;
  }
  return options.padding_value;
}

class BatchIterator : public SequentialIterator {
 public:
  BatchIterator(const IteratorContext& ctx, const BatchNode* node)
      : SequentialIterator(ctx, node->padded_ ? "padded_batch" : "batch"),
        node_(node),
        input_(node->input_->MakeIterator(ctx)) {}
  bool NextImpl(Element* out) override {
    if (!node_->padded_) return NextStacked(out);
    std::vector<Element> elements;
    Element e;
    while (static_cast<int64_t>(elements.size()) < node_->size_ && Pull(input_.get(), &e)) {
      elements.push_back(std::move(e));
    }
    if (elements.empty()) return false;
    if (node_->drop_ && static_cast<int64_t>(elements.size()) < node_->size_) return false;
    *out = PadAndStack(elements, node_->pad_, "padded_batch");
    return true;
  }
  void Save(StateWriter* w) override {
    w->WriteTag("batch");
    input_->Save(w);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("batch");
    input_->Restore(r);
  }

 private:
  // Copies each element into the batch as it arrives and lets it go: a row's tensors are
  // freed before the next row's are allocated, so the allocator hands the same chunks back
  // (holding a whole batch of per-row scalars first overflowed its per-thread cache: a third
  // of a CSV pipeline's time was malloc and free).
  bool NextStacked(Element* out) {
    Element e;
    if (!Pull(input_.get(), &e)) return false;
    BatchBuffer buffer;
    buffer.Allocate(e, node_->size_);
    int64_t rows = 0;
    do {
      try {
        buffer.Place(rows++, e);
      } catch (...) {
        RethrowInStage("batch", nullptr);
      }
      e = Element();
    } while (rows < node_->size_ && Pull(input_.get(), &e));
    if (node_->drop_ && rows < node_->size_) return false;
    *out = buffer.Finish(rows);
    return true;
  }
  const BatchNode* node_;
  std::unique_ptr<Iterator> input_;
};

std::unique_ptr<Iterator> BatchNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<BatchIterator>(ctx, this);
}

// ---- unbatch ----

class UnbatchNode : public DatasetNode {
 public:
  explicit UnbatchNode(NodePtr input) : input_(std::move(input)) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override { return "unbatch<-" + input_->Describe(); }
  NodePtr input_;
};

class UnbatchIterator : public SequentialIterator {
 public:
  UnbatchIterator(const IteratorContext& ctx, const UnbatchNode* node)
      : SequentialIterator(ctx, "unbatch"), input_(node->input_->MakeIterator(ctx)) {}
  bool NextImpl(Element* out) override {
    while (row_ >= rows_) {
      if (!Pull(input_.get(), &batch_)) return false;
      row_ = 0;
      rows_ = -1;
      for (const auto& [name, t] : batch_.features) {
        if (t.rank() == 0) {
          ErrorContext ctx = batch_.where.Context();
          ctx.key = name;
          throw Error(ErrorCode::kInvalidArgument,
                      "stage 'unbatch': feature '" + name + "' is a scalar", ctx);
        }
        if (rows_ >= 0 && t.dim(0) != rows_) {
          ErrorContext ctx = batch_.where.Context();
          ctx.key = name;
          throw Error(ErrorCode::kInvalidArgument,
                      "stage 'unbatch': features disagree on the batch size", ctx);
        }
        rows_ = t.dim(0);
      }
      if (rows_ < 0) rows_ = 0;
    }
    Element e;
    for (const auto& [name, t] : batch_.features) {
      Shape shape(t.shape().begin() + 1, t.shape().end());
      e.features.emplace_back(name, t.Slice(row_, row_ + 1).Reshaped(shape));
    }
    e.id = batch_.id + row_;
    e.where = batch_.where;
    ++row_;
    *out = std::move(e);
    return true;
  }
  void Save(StateWriter* w) override {
    w->WriteTag("unbatch");
    w->WriteI64(row_);
    w->WriteI64(rows_);
    if (row_ < rows_) w->WriteElement(batch_);
    input_->Save(w);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("unbatch");
    row_ = r->ReadI64();
    rows_ = r->ReadI64();
    if (row_ < rows_) batch_ = r->ReadElement();
    input_->Restore(r);
  }

 private:
  std::unique_ptr<Iterator> input_;
  Element batch_;
  int64_t row_ = 0, rows_ = 0;
};

std::unique_ptr<Iterator> UnbatchNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<UnbatchIterator>(ctx, this);
}

void CheckSize(int64_t batch_size) {
  if (batch_size < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "batch size must be >= 1, got " + std::to_string(batch_size),
                {.key = "batch_size"});
  }
}

}  // namespace

Element PadAndStack(const std::vector<Element>& elements, const PaddedBatchOptions& options,
                    const std::string& stage) {
  Element out;
  out.id = elements[0].id;
  out.where = elements[0].where;
  const int64_t n = static_cast<int64_t>(elements.size());
  for (const auto& [name, first] : elements[0].features) {
    Shape shape = PaddedShape(elements, name, options, stage);
    shape.insert(shape.begin(), n);
    Tensor batch(first.dtype(), shape);
    const double pad = PaddingValue(options, name);
    if (pad != 0) Fill(batch, pad);
    for (int64_t i = 0; i < n; ++i) CopyPadded(elements[i].Get(name), batch, i);
    out.features.emplace_back(name, std::move(batch));
    if (std::find(options.masks.begin(), options.masks.end(), name) == options.masks.end()) {
      continue;
    }
    Tensor mask(DType::kUInt8, shape);  // zero-filled
    for (int64_t i = 0; i < n; ++i) {
      Tensor ones(DType::kUInt8, elements[i].Get(name).shape());
      Fill(ones, 1);
      CopyPadded(ones, mask, i);
    }
    out.features.emplace_back(name + "_mask", std::move(mask));
  }
  return out;
}

NodePtr MakeBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder) {
  CheckSize(batch_size);
  return std::make_shared<BatchNode>(std::move(input), batch_size, drop_remainder, false,
                                     PaddedBatchOptions{});
}

NodePtr MakePaddedBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder,
                            const PaddedBatchOptions& options) {
  CheckSize(batch_size);
  return std::make_shared<BatchNode>(std::move(input), batch_size, drop_remainder, true, options);
}

NodePtr MakeUnbatchNode(NodePtr input) { return std::make_shared<UnbatchNode>(std::move(input)); }

}  // namespace shardflow::pipeline
