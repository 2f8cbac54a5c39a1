// Error hints name settings that exist where the user set things (issue 28, item 9): a partial
// fixed-length record names [data] tail (convert's input.on_error is checked by
// apps.convert.source.fixed_tail_hint), and images of several sizes name the resize
// augmentation, not padded_batch (no such config option).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "io/pipeline/input_pipeline.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace input_hints_test {

using testing::Drain;
using testing::ErrorText;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::WriteFile;

InputSpec Parse(const std::string& body) {
  ConfigSchema schema;
  InputSpec spec;
  RegisterDataOptions(schema, "data", &spec);
  schema.ParseString("[data]\nparallel_calls = 0\nprefetch = 0\nepochs = 1\n" + body, "exp.ini");
  return spec;
}

TEST(InputHints, PartialFixedRecordNamesDataTail) {
  shardflow::testing::ScratchDir dir("hints_fixed");
  WriteFile((dir / "a.bin").string(), std::string(10, 'x'));  // 3 records of 3 bytes + 1
  const InputSpec spec = Parse("files = " + (dir / "a.bin").string() +
                               "\nformat = fixed\nrecord_bytes = 3\nbatch_size = 2\n");
  const std::string what = ErrorText([&] { Drain(BuildInputPipeline(spec, 0, 1)); });
  EXPECT_THAT(what, HasSubstr("set data.tail = skip"));
}

TEST(InputHints, ImagesOfSeveralSizesNameTheResizeAugmentation) {
  shardflow::testing::ScratchDir dir("hints_images");
  std::filesystem::create_directories(dir / "root/a");
  const std::filesystem::path images = shardflow::testing::FixturesDir() / "images";
  std::filesystem::copy_file(images / "photo.png", dir / "root/a/1.png");
  std::filesystem::copy_file(images / "rgba.png", dir / "root/a/2.png");
  const InputSpec spec = Parse("format = images\nchannels = 3\nroot = " + (dir / "root").string() +
                               "\nbatch_size = 2\n");
  const std::string what = ErrorText([&] { Drain(BuildInputPipeline(spec, 0, 1)); });
  EXPECT_THAT(what, HasSubstr("augmentations = resize:HxW"));
  EXPECT_THAT(what, Not(HasSubstr("padded_batch")));
}

}  // namespace input_hints_test
}  // namespace shardflow::pipeline
