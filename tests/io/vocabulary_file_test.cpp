// Vocabulary files (io/vocabulary_file.hpp): every byte string round-trips, a value with a line
// break stays one value, and a bad escape names the file and line.
#include "io/vocabulary_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace shardflow::io {
namespace vocabulary_file_test {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("vocabulary_file_test." + std::to_string(::getpid()) + "." + name))
      .string();
}

TEST(VocabularyFile, EveryByteStringRoundTrips) {
  std::vector<std::string> values = {"plain",
                                     "two\nlines",
                                     "cr\rhere",
                                     "back\\slash",
                                     "\\n literally",
                                     "ends with \\",
                                     std::string("nul\0x", 5),
                                     "\xff\xfe bytes",
                                     " spaces "};
  for (int c = 1; c < 256; ++c) values.push_back(std::string(1, static_cast<char>(c)));
  const std::string path = TempPath("all");
  WriteVocabularyFile(path, values);
  const std::vector<std::string> read = ReadVocabularyFile(path, "data.assemble");
  EXPECT_EQ(read, values);
  std::filesystem::remove(path);
}

TEST(VocabularyFile, ALineBreakInAValueStaysOneValue) {
  const std::string path = TempPath("newline");
  WriteVocabularyFile(path, {"a", "b\nc", "d"});
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "a\nb\\nc\nd\n");
  EXPECT_EQ(ReadVocabularyFile(path, "k").size(), 3u);
  std::filesystem::remove(path);
}

TEST(VocabularyFile, HandWrittenFilesReadAsTheyLook) {
  const std::string path = TempPath("hand");
  std::ofstream(path, std::ios::binary) << "red\r\ngreen\n\nblue\n";
  EXPECT_EQ(ReadVocabularyFile(path, "k"), (std::vector<std::string>{"red", "green", "blue"}));
  std::filesystem::remove(path);
}

TEST(VocabularyFile, BadEscapesAndMissingFilesAreNamed) {
  const std::string path = TempPath("bad");
  std::ofstream(path, std::ios::binary) << "ok\nbad\\t\n";
  try {
    ReadVocabularyFile(path, "data.assemble");
    FAIL() << "a bad escape was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(path + ":2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("data.assemble"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  try {
    ReadVocabularyFile(path, "data.assemble");
    FAIL() << "a missing file was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

}  // namespace vocabulary_file_test
}  // namespace shardflow::io
