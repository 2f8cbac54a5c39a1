#include "apps/train/device_input.hpp"

#include <chrono>
#include <cstring>
#include <utility>

namespace shardflow::train {

DeviceInput::DeviceInput(Device device, apps::BatchSpec spec)
    : device_(device), spec_(std::move(spec)), staging_(DeviceStagingFor(device)) {}

DeviceInput::~DeviceInput() {
  for (int i = 0; i < 2; ++i) {
    Slot& s = slots_[static_cast<size_t>(i)];
    // Copies may still read the pinned buffers: wait for them, never throwing here.
    try {
      staging_.WaitCopied(i);
    } catch (...) {  // a device that failed: its copies are gone with it
    }
    staging_.FreePinned(s.pinned_x);
    staging_.FreePinned(s.pinned_labels);
  }
}

const void* DeviceInput::LabelsOf(const pipeline::Element& batch) const {
  if (spec_.label_feature.empty() || !batch.Has(spec_.label_feature)) return nullptr;
  return batch.Get(spec_.label_feature).raw_data();
}

bool DeviceInput::Holds(const Slot& s, const pipeline::Element& batch) const {
  // A batch without its features is never a hit: staging it names what is missing.
  if (!s.staged || !batch.Has(spec_.input_feature)) return false;
  const Tensor& x = batch.Get(spec_.input_feature);
  return s.source == x.raw_data() && s.source_shape == x.shape() &&
         s.labels_source == LabelsOf(batch);
}

apps::ModelBatch DeviceInput::Take(const pipeline::Element& batch) {
  const int slot = Other();
  Slot& s = slots_[static_cast<size_t>(slot)];
  const bool hit = Holds(s, batch);
  if (!hit) Stage(slot, batch);
  current_ = slot;
  staging_.Acquire(slot);
  s.staged = false;
  s.held = pipeline::Element();
  s.source = nullptr;
  s.labels_source = nullptr;
  ++stats_.batches;
  stats_.overlapped += hit ? 1 : 0;
  return apps::ModelBatch{.x = s.x, .labels = s.labels, .rows = s.rows};
}

void DeviceInput::Prefetch(const pipeline::Element& next) { Stage(Other(), next); }

void DeviceInput::StepIssued() {
  if (current_ >= 0) staging_.Release(current_);
}

void DeviceInput::Stage(int slot, const pipeline::Element& batch) {
  const auto t0 = std::chrono::steady_clock::now();
  Slot& s = slots_[static_cast<size_t>(slot)];
  staging_.WaitCopied(slot);  // the slot's pinned buffers are free to rewrite
  const apps::ModelBatch mb = apps::ToModelBatch(batch, spec_, &scratch_);
  StageTensor(slot, mb.x, &s.pinned_x, &s.x_capacity, &s.x);
  if (!spec_.label_feature.empty()) {
    StageTensor(slot, mb.labels, &s.pinned_labels, &s.labels_capacity, &s.labels);
  } else {
    s.labels = Tensor();
  }
  s.rows = mb.rows;
  s.held = batch;
  const Tensor& x = batch.Get(spec_.input_feature);
  s.source = x.raw_data();
  s.source_shape = x.shape();
  s.labels_source = LabelsOf(batch);
  s.staged = true;
  stats_.stage_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void DeviceInput::StageTensor(int slot, const Tensor& host, void** pinned, size_t* capacity,
                              Tensor* device) {
  const size_t bytes = host.byte_size();
  if (bytes > *capacity) {
    staging_.FreePinned(*pinned);
    *pinned = nullptr;
    *capacity = 0;
    *pinned = staging_.AllocatePinned(bytes);
    *capacity = bytes;
  }
  if (bytes > 0) std::memcpy(*pinned, host.raw_data(), bytes);
  if (device->dtype() != host.dtype() || device->shape() != host.shape() ||
      device->device() != device_) {
    *device = Tensor(host.dtype(), host.shape(), device_);
    // The new memory was allocated and zeroed in the compute stream's order: the copy into it
    // comes after that.
    staging_.Release(slot);
  }
  staging_.Copy(slot, device->raw_data(), *pinned, bytes);
  stats_.bytes += static_cast<int64_t>(bytes);
}

}  // namespace shardflow::train
