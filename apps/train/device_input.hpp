// DeviceInput: the training loop's batches on the model's device, double-buffered, so a
// batch's host-to-device copy overlaps the previous step's compute (docs/design.md, "copy to
// device, pinned, async").
//
// Per step the loop takes its batch (Take), then stages the next one, which the pipeline's
// prefetch stage already holds (RankInput::Peek: nothing is consumed, so checkpoints and
// resume are unchanged), into the other slot (Prefetch), then issues the step's work and says
// so (StepIssued). Staging converts the batch (apps::ToModelBatch) into the slot's pinned host
// buffers and queues their copies on the device's copy stream, behind the compute that last
// read the slot (core/device_staging.hpp); the step that takes it makes its compute wait for
// the copies on the device, not on the host. A batch that was not staged ahead (the first of a
// run or of a pass, a prefetch that had not produced it yet) is staged when taken: the same
// bytes, without the overlap. A staged batch is known by its input tensor's storage and shape
// (and its labels' storage), which the slot holds a reference to, so it cannot be mistaken for
// another.
// On the simulated device (core/backend/host_twin.hpp) staging is synchronous (plain memory, a
// copy at once): the same calls in the same order, nothing overlapped, nothing timed.
// Thread-safety: the training thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "apps/common/model_batch.hpp"
#include "core/device_staging.hpp"
#include "core/tensor.hpp"
#include "io/pipeline/element.hpp"

namespace shardflow::train {

struct DeviceInputStats {
  int64_t batches = 0;     // taken
  int64_t overlapped = 0;  // of them, staged during the previous step
  int64_t bytes = 0;       // copied to the device
  double stage_s = 0;      // host time converting into pinned buffers and queueing copies
};

class DeviceInput {
 public:
  DeviceInput(Device device, apps::BatchSpec spec);
  ~DeviceInput();
  DeviceInput(const DeviceInput&) = delete;
  DeviceInput& operator=(const DeviceInput&) = delete;

  // This step's batch, on the device.
  apps::ModelBatch Take(const pipeline::Element& batch);
  // Stages the batch the next Take will get into the slot this step does not use.
  void Prefetch(const pipeline::Element& next);
  // The step's work has been issued: its slot may be refilled once that work is done.
  void StepIssued();
  const DeviceInputStats& stats() const { return stats_; }

 private:
  struct Slot {
    void* pinned_x = nullptr;
    void* pinned_labels = nullptr;
    size_t x_capacity = 0, labels_capacity = 0;
    Tensor x, labels;              // on the device
    pipeline::Element held;        // the staged batch (keeps its storage, and so its identity)
    const void* source = nullptr;  // its input tensor's data
    const void* labels_source = nullptr;  // its labels' data (null without labels)
    Shape source_shape;
    int64_t rows = 0;
    bool staged = false;
  };
  void Stage(int slot, const pipeline::Element& batch);
  // Copies `host` into the slot's pinned buffer (grown as needed) and queues it into `device`
  // (reallocated when the shape or dtype changed).
  void StageTensor(int slot, const Tensor& host, void** pinned, size_t* capacity, Tensor* device);
  // Whether the slot holds `batch`: the same input (and labels) storage and shape.
  bool Holds(const Slot& s, const pipeline::Element& batch) const;
  const void* LabelsOf(const pipeline::Element& batch) const;  // null without labels
  int Other() const { return current_ < 0 ? 0 : 1 - current_; }

  Device device_;
  apps::BatchSpec spec_;
  DeviceStaging& staging_;
  std::array<Slot, 2> slots_;
  int current_ = -1;  // the slot of the step in progress
  Tensor scratch_;    // ToModelBatch's float conversion
  DeviceInputStats stats_;
};

}  // namespace shardflow::train
