#include "io/pipeline/element.hpp"

namespace shardflow::pipeline {

ErrorContext Provenance::Context() const {
  ErrorContext ctx;
  if (file) ctx.file = *file;
  if (record >= 0) ctx.record = record;
  if (offset > 0) ctx.offset = offset;
  return ctx;
}

bool Element::Has(const std::string& name) const {
  for (const auto& [key, value] : features) {
    if (key == name) return true;
  }
  return false;
}

const Tensor& Element::Get(const std::string& name) const {
  for (const auto& [key, value] : features) {
    if (key == name) return value;
  }
  ErrorContext ctx = where.Context();
  ctx.key = name;
  std::string have;
  for (const auto& f : features) have += (have.empty() ? "" : ",") + f.first;
  ctx.hint = "element has features [" + have + "]";
  throw Error(ErrorCode::kNotFound, "element has no feature '" + name + "'", ctx);
}

Tensor& Element::Get(const std::string& name) {
  return const_cast<Tensor&>(static_cast<const Element*>(this)->Get(name));
}

void Element::Set(const std::string& name, Tensor tensor) {
  for (auto& [key, value] : features) {
    if (key == name) {
      value = std::move(tensor);
      return;
    }
  }
  features.emplace_back(name, std::move(tensor));
}

size_t Element::ByteSize() const {
  size_t total = 0;
  for (const auto& f : features) total += f.second.byte_size();
  return total;
}

}  // namespace shardflow::pipeline
