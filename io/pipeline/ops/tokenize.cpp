#include "io/pipeline/ops/tokenize.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include "core/logging.hpp"

namespace shardflow::pipeline {

MapFn MakeTokenizeOp(std::shared_ptr<const text::Tokenizer> tokenizer, TokenizeOptions o,
                     std::shared_ptr<TokenizeCounts> counts) {
  if (!tokenizer || o.max_tokens < 0 || (o.pad_to != 0 && o.pad_to != o.max_tokens)) {
    throw Error(ErrorCode::kInvalidArgument,
                "tokenize needs a tokenizer, max_tokens >= 0 and pad_to 0 or max_tokens",
                {.key = o.output});
  }
  if (!counts) counts = std::make_shared<TokenizeCounts>();
  return [tokenizer, o, counts](Element& e, const MapContext&) {
    ErrorContext ctx = e.where.Context();
    ctx.key = o.input;
    if (!e.Has(o.input)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "the document feature '" + o.input + "' is not in the record", ctx);
    }
    const Tensor& bytes = e.Get(o.input);
    if (bytes.dtype() != DType::kUInt8 || bytes.rank() > 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "the document feature '" + o.input + "' is " + DTypeName(bytes.dtype()) + " " +
                      ShapeToString(bytes.shape()) + ", not bytes (uint8 [n])",
                  ctx);
    }
    thread_local std::vector<int64_t> ids;
    ids.clear();
    const std::string_view text(static_cast<const char*>(bytes.raw_data()),
                                static_cast<size_t>(bytes.num_elements()));
    const int64_t unknown = tokenizer->Encode(text, &ids);
    auto n = static_cast<int64_t>(ids.size());
    if (o.max_tokens > 0 && n > o.max_tokens) {
      const std::string what = "document of " + std::to_string(n) + " tokens, more than " +
                               "max_tokens = " + std::to_string(o.max_tokens);
      if (o.fail_too_long) {
        ctx.key = o.too_long_key;
        ctx.hint = o.too_long_key + " = truncate cuts it (and counts it)";
        throw Error(ErrorCode::kInvalidArgument, what, ctx);
      }
      if (counts->truncated.fetch_add(1) == 0 && FirstTimeInProcess("tokenize:truncate")) {
        SF_LOG(Warn) << what << " (" << e.where.FileName() << " record " << e.where.record
                     << "): cut, as " << o.too_long_key
                     << " = truncate says; later cuts are counted";
      }
      n = o.max_tokens;
    }
    counts->documents.fetch_add(1);
    counts->tokens.fetch_add(n);
    counts->unknown_words.fetch_add(unknown);
    if (n == 0) counts->empty.fetch_add(1);
    Tensor out(DType::kInt64, {o.pad_to > 0 ? o.pad_to : n});
    int64_t* dst = out.data<int64_t>();
    std::copy(ids.begin(), ids.begin() + n, dst);
    std::fill(dst + n, dst + out.num_elements(), tokenizer->pad_id());
    Tensor length(DType::kInt64, {});
    *length.data<int64_t>() = n;
    std::erase_if(e.features, [&](const auto& f) { return f.first == o.input; });
    e.Set(o.output, std::move(out));
    e.Set(o.length, std::move(length));
  };
}

}  // namespace shardflow::pipeline
