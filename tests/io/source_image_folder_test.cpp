// ImageFolderSource: labels from sorted class folders, label map, list files, parallel reads,
// exactly-once over ranks, corrupt images (error naming the file, or skipped and counted).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/sources/image_folder_source.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace source_image_folder_test {

using testing::ErrorText;
using testing::ExpectHas;
using testing::ReadAllRanks;
using testing::WriteFile;

// An h x w x 3 image whose pixels encode `tag` (first pixel) so elements can be told apart.
Tensor Image(int h, int w, int tag) {
  Tensor t(DType::kUInt8, {h, w, 3});
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7);
  t.data<uint8_t>()[0] = static_cast<uint8_t>(tag);
  return t;
}

// root/{cat,dog,zebra}: 3 + 1 + 5 images (PNG, lossless; dog's is a JPEG), plus a text file.
void MakeTree(const std::filesystem::path& root) {
  int tag = 0;
  for (auto [cls, n] : {std::pair{"zebra", 5}, std::pair{"cat", 3}, std::pair{"dog", 1}}) {
    std::filesystem::create_directories(root / cls);
    for (int i = 0; i < n; ++i, ++tag) {
      const bool jpeg = std::string(cls) == "dog";
      WriteFile((root / cls / ("img" + std::to_string(i) + (jpeg ? ".JPG" : ".png"))).string(),
                jpeg ? EncodeJpeg(Image(8, 6, tag)) : EncodePng(Image(4 + i, 5, tag)));
    }
  }
  WriteFile((root / "cat" / "notes.txt").string(), "not an image");
}

std::string Key(const Element& e) {
  return std::to_string(*e.Get("label").data<int64_t>()) + "/" +
         std::to_string(e.Get("image").dim(0)) + "x" + std::to_string(e.Get("image").dim(1)) + "#" +
         std::to_string(e.where.file_index);
}

TEST(ImageFolderSource, LabelsFromSortedFoldersAndLabelMap) {
  shardflow::testing::ScratchDir dir("images_tree");
  MakeTree(dir.path() / "root");
  ImageFolderSource source({.root = (dir / "root").string()});
  EXPECT_EQ(source.class_names(), (std::vector<std::string>{"cat", "dog", "zebra"}));
  ASSERT_EQ(source.Files().size(), 9u);  // notes.txt is not listed
  EXPECT_EQ(source.Label(0), 0);
  EXPECT_EQ(source.Label(3), 1);
  EXPECT_EQ(source.Label(8), 2);
  source.WriteLabelMap((dir / "labels.csv").string());
  std::ifstream in(dir / "labels.csv");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "0,cat\n1,dog\n2,zebra\n");
  auto reader = source.Open(3, {});
  Element e;
  ASSERT_TRUE(reader->Next(&e));
  EXPECT_EQ(e.Get("image").shape(), (Shape{8, 6, 3}));
  EXPECT_EQ(*e.Get("label").data<int64_t>(), 1);
  EXPECT_FALSE(reader->Next(&e));
}

TEST(ImageFolderSource, ExactlyOnceOverRanksWithParallelReads) {
  shardflow::testing::ScratchDir dir("images_once");
  MakeTree(dir.path() / "root");
  auto source = OpenImageFolderSource({.root = (dir / "root").string()});
  const auto expected = ReadAllRanks(source, ShardPolicy::kFile, 1, Key);
  EXPECT_EQ(expected.size(), 9u);
  for (ShardPolicy policy : {ShardPolicy::kFile, ShardPolicy::kRecord, ShardPolicy::kAuto}) {
    for (int ranks = 1; ranks <= 4; ++ranks) {
      EXPECT_TRUE(ReadAllRanks(source, policy, ranks, Key,
                               {.cycle_length = 4, .num_parallel_reads = 4}) == expected)
          << ShardPolicyName(policy) << " ranks=" << ranks;
    }
  }
  // Parallel reads keep the deterministic order of the sequential read.
  ShardPlan plan = PlanShards(source->Files(), false, ShardPolicy::kFile, 1, 0);
  auto a = testing::Drain(
      Dataset::FromRecordSource(source, plan, {.cycle_length = 4, .num_parallel_reads = 4}));
  auto b = testing::Drain(
      Dataset::FromRecordSource(source, plan, {.cycle_length = 4, .num_parallel_reads = 4}));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(Key(a[i]), Key(b[i]));
}

TEST(ImageFolderSource, ListFileAndItsErrors) {
  shardflow::testing::ScratchDir dir("images_list");
  MakeTree(dir.path() / "root");
  const std::string list = (dir / "list.csv").string();
  WriteFile(list, "# path,label\nroot/cat/img0.png,4\r\n\n" + (dir / "root/dog/img0.JPG").string() +
                      ",2\n");
  ImageFolderSource source({.list_file = list});
  ASSERT_EQ(source.Files().size(), 2u);
  EXPECT_EQ(source.Label(0), 4);
  EXPECT_EQ(source.Label(1), 2);
  WriteFile(list, "root/cat/img0.png,4\nroot/cat/img1.png,x\n");
  std::string text = ErrorText([&] { ImageFolderSource({.list_file = list}); });
  ExpectHas(text, "list line 2");
  ExpectHas(text, "list.csv");
  WriteFile(list, "root/cat/gone.png,1\n");
  text = ErrorText([&] { ImageFolderSource({.list_file = list}); });
  ExpectHas(text, "gone.png");
  ExpectHas(text, "list line 1");
  ExpectHas(ErrorText([&] { ImageFolderSource({.root = (dir / "nowhere").string()}); }), "nowhere");
  EXPECT_THROW(ImageFolderSource({}), Error);
}

TEST(ImageFolderSource, CorruptImageFailsNamingFileOrIsSkippedAndCounted) {
  shardflow::testing::ScratchDir dir("images_corrupt");
  MakeTree(dir.path() / "root");
  const std::string png = EncodePng(Image(4, 5, 1));
  WriteFile((dir / "root/cat/img1.png").string(), png.substr(0, png.size() / 2));  // truncated
  WriteFile((dir / "root/zebra/img3.png").string(), "\x89PNG garbage");
  auto failing = OpenImageFolderSource({.root = (dir / "root").string()});
  ShardPlan plan = PlanShards(failing->Files(), false, ShardPolicy::kFile, 1, 0);
  ErrorCode code{};
  const std::string text =
      ErrorText([&] { testing::Drain(Dataset::FromRecordSource(failing, plan)); }, &code);
  EXPECT_EQ(code, ErrorCode::kDataLoss);
  ExpectHas(text, "cat/img1.png");
  ExpectHas(text, "corrupt image");
  auto skipping = std::make_shared<ImageFolderSource>(
      ImageFolderOptions{.root = (dir / "root").string(), .on_error = OnError::kSkip});
  auto got = testing::Drain(
      Dataset::FromRecordSource(skipping, plan, {.cycle_length = 3, .num_parallel_reads = 3}));
  EXPECT_EQ(got.size(), 7u);
  EXPECT_EQ(skipping->counters().skipped_records.load(), 2);
  // decode = false hands the bytes on, corrupt or not.
  auto raw = OpenImageFolderSource({.root = (dir / "root").string(), .decode = false});
  EXPECT_EQ(testing::Drain(Dataset::FromRecordSource(raw, plan)).size(), 9u);
}

}  // namespace source_image_folder_test
}  // namespace shardflow::pipeline
