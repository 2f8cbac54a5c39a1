// DeviceInput (apps/train/device_input.hpp) on the simulated CUDA device, with a staging that
// records every call: the batches arrive on the device with the bytes ToModelBatch gives; a
// batch staged ahead is taken as staged (overlapped), another one is staged when taken; and the
// order the device relies on holds slot by slot: the host rewrites a slot's pinned buffers only
// after WaitCopied, copies into a slot come after the Release of the step that last read it,
// a step acquires its slot after the copies, and steps alternate slots.
#include "apps/train/device_input.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/backend/host_twin.hpp"
#include "core/device_staging.hpp"

namespace shardflow::train {
namespace device_input_test {

struct Call {
  std::string op;
  int slot;
};

// Synchronous copies (the simulated device's memory is host memory), every call recorded.
class RecordingStaging final : public DeviceStaging {
 public:
  void* AllocatePinned(size_t bytes) override {
    calls.push_back({"alloc", -1});
    return ::operator new(bytes);
  }
  void FreePinned(void* p) noexcept override { ::operator delete(p); }
  void Copy(int slot, void* dst, const void* src, size_t bytes) override {
    calls.push_back({"copy", slot});
    std::memcpy(dst, src, bytes);
  }
  void Acquire(int slot) override { calls.push_back({"acquire", slot}); }
  void Release(int slot) override { calls.push_back({"release", slot}); }
  void WaitCopied(int slot) override { calls.push_back({"wait", slot}); }
  StagingTimes TakeTimes() override { return {}; }
  std::vector<Call> calls;
};

class DeviceInputTest : public ::testing::Test {
 protected:
  // The simulated device's runtime with the recording staging in it; back to the default after.
  void SetUp() override { UseStaging(&staging_); }
  void TearDown() override { UseStaging(nullptr); }
  static void UseStaging(DeviceStaging* staging) {
    DeviceRuntime runtime = DeviceRuntimeFor(Device::kCuda);
    runtime.staging = staging;
    RegisterDeviceRuntime(runtime);
  }
  SimulatedCudaDevice device_;
  RecordingStaging staging_;
};

const apps::BatchSpec kSpec{
    .input_feature = "image", .label_feature = "label", .input_shape = {2, 3}, .scale = 0.5};

// A batch of `rows` uint8 images (2 x 3) and int64 labels, numbered from `first`.
pipeline::Element Batch(int64_t rows, int first) {
  Tensor image(DType::kUInt8, {rows, 2, 3});
  Tensor label(DType::kInt64, {rows});
  for (int64_t i = 0; i < rows * 6; ++i) image.data<uint8_t>()[i] = static_cast<uint8_t>(first + i);
  for (int64_t i = 0; i < rows; ++i) label.data<int64_t>()[i] = first + i;
  pipeline::Element e;
  e.Set("image", image);
  e.Set("label", label);
  return e;
}

void ExpectSameBatch(const apps::ModelBatch& got, const pipeline::Element& batch) {
  Tensor scratch;
  const apps::ModelBatch want = apps::ToModelBatch(batch, kSpec, &scratch);
  ASSERT_EQ(got.x.device(), Device::kCuda);
  ASSERT_EQ(got.rows, want.rows);
  const Tensor x = got.x.To(Device::kCpu), labels = got.labels.To(Device::kCpu);
  ASSERT_EQ(x.shape(), want.x.shape());
  EXPECT_EQ(std::memcmp(x.raw_data(), want.x.raw_data(), want.x.byte_size()), 0);
  ASSERT_EQ(labels.shape(), want.labels.shape());
  EXPECT_EQ(std::memcmp(labels.raw_data(), want.labels.raw_data(), want.labels.byte_size()), 0);
}

TEST_F(DeviceInputTest, StagedBatchesAreTakenAsStagedAndOthersStagedWhenTaken) {
  DeviceInput in(Device::kCuda, kSpec);
  // 7 steps: the next batch is staged ahead except before step 3 (a pass boundary, say), and
  // before step 5 the loop stages a batch that is not the one step 5 gets.
  std::vector<pipeline::Element> batches;
  for (int i = 0; i < 7; ++i) batches.push_back(Batch(i == 6 ? 3 : 4, 10 * i));
  const pipeline::Element stranger = Batch(4, 200);
  for (int step = 0; step < 7; ++step) {
    const apps::ModelBatch mb = in.Take(batches[step]);
    ExpectSameBatch(mb, batches[step]);
    if (step + 1 < 7 && step != 2) in.Prefetch(step == 4 ? stranger : batches[step + 1]);
    in.StepIssued();
  }
  // Staged ahead and taken: steps 1, 2, 4 and 6 (step 5 got another batch than the staged one).
  EXPECT_EQ(in.stats().batches, 7);
  EXPECT_EQ(in.stats().overlapped, 4);
}

TEST_F(DeviceInputTest, TheDeviceOrderHoldsSlotBySlot) {
  DeviceInput in(Device::kCuda, kSpec);
  std::vector<pipeline::Element> batches;
  for (int i = 0; i < 6; ++i) batches.push_back(Batch(i == 4 ? 2 : 4, i));
  for (int step = 0; step < 6; ++step) {
    in.Take(batches[step]);
    if (step + 1 < 6) in.Prefetch(batches[step + 1]);
    in.StepIssued();
  }
  // Replay the calls: per slot, whether its pinned buffers may be written (after a wait),
  // whether the step that read it has released it, and the slot of each step.
  bool waited[2] = {false, false}, released[2] = {true, true}, copied[2] = {false, false};
  std::vector<int> acquired;
  for (const Call& c : staging_.calls) {
    if (c.op == "alloc") continue;
    ASSERT_GE(c.slot, 0);
    ASSERT_LT(c.slot, 2);
    const int s = c.slot;
    if (c.op == "wait") {
      waited[s] = true;
    } else if (c.op == "copy") {
      EXPECT_TRUE(waited[s]) << "a copy into slot " << s << " before its pinned buffers were free";
      EXPECT_TRUE(released[s]) << "a copy into slot " << s << " while a step still reads it";
      copied[s] = true;
    } else if (c.op == "acquire") {
      EXPECT_TRUE(copied[s]) << "slot " << s << " acquired without its copies";
      acquired.push_back(s);
      released[s] = false;
      waited[s] = false;
      copied[s] = false;
    } else if (c.op == "release") {
      released[s] = true;
    }
  }
  ASSERT_EQ(acquired.size(), 6u);
  for (size_t i = 1; i < acquired.size(); ++i) EXPECT_NE(acquired[i], acquired[i - 1]) << i;
}

TEST_F(DeviceInputTest, WithoutLabelsOnlyTheInputIsCopied) {
  apps::BatchSpec spec = kSpec;
  spec.label_feature = "";
  DeviceInput in(Device::kCuda, spec);
  const apps::ModelBatch mb = in.Take(Batch(3, 0));
  EXPECT_EQ(mb.rows, 3);
  EXPECT_EQ(mb.labels.num_elements(), 0);
  EXPECT_EQ(mb.x.device(), Device::kCuda);
  in.StepIssued();
  int copies = 0;
  for (const Call& c : staging_.calls) copies += c.op == "copy" ? 1 : 0;
  EXPECT_EQ(copies, 1);
}

}  // namespace device_input_test
}  // namespace shardflow::train
