#include "io/file.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/test_paths.hpp"

namespace shardflow::io {
namespace file_test {

std::string ReadAll(SequentialFile& f, size_t chunk) {
  std::string out, buf(chunk, '\0');
  while (true) {
    size_t got = 0;
    ThrowIfError(f.Read(chunk, buf.data(), &got));
    if (got == 0) return out;
    out.append(buf.data(), got);
  }
}

TEST(PosixFile, WriteThenReadSequentialAndRandom) {
  testing::ScratchDir dir("posix_file");
  const std::string path = (dir / "a.bin").string();
  std::string data;
  for (int i = 0; i < 3000000; ++i) data.push_back(static_cast<char>(i * 7));
  {
    auto w = FileSystem::Default()->NewWritableFile(path);
    ThrowIfError(w->Append(std::string_view(data).substr(0, 10)));
    ThrowIfError(w->Append(std::string_view(data).substr(10)));
    ThrowIfError(w->Close());
  }
  EXPECT_EQ(FileSystem::Default()->FileSize(path), data.size());
  auto r = FileSystem::Default()->NewSequentialFile(path);
  EXPECT_EQ(ReadAll(*r, 1 << 20), data);
  auto s = FileSystem::Default()->NewSequentialFile(path);
  ThrowIfError(s->Skip(2999990));
  EXPECT_EQ(ReadAll(*s, 4), data.substr(2999990));
  auto ra = FileSystem::Default()->NewRandomAccessFile(path);
  std::string buf(100, '\0');
  size_t got = 0;
  ThrowIfError(ra->Read(2999950, 100, buf.data(), &got));
  EXPECT_EQ(got, 50u);
  EXPECT_EQ(buf.substr(0, 50), data.substr(2999950));
}

TEST(PosixFile, MissingFileIsNotFoundNamingThePath) {
  try {
    FileSystem::Default()->NewSequentialFile("/nonexistent/x.tfrecord");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_EQ(e.context().file, "/nonexistent/x.tfrecord");
  }
}

TEST(MemFile, ReadsAndInjectsFaults) {
  MemFileSystem fs;
  fs.SetContents("m", "0123456789");
  auto f = fs.NewSequentialFile("m");
  EXPECT_EQ(ReadAll(*f, 3), "0123456789");
  fs.InjectReadError("m", 5);
  auto g = fs.NewSequentialFile("m");
  char buf[8];
  size_t got = 0;
  ASSERT_TRUE(g->Read(8, buf, &got).ok());
  EXPECT_EQ(got, 5u);  // short read up to the fault
  Status s = g->Read(1, buf, &got);
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_EQ(s.context().offset, 5u);
  auto w = fs.NewWritableFile("out");
  ThrowIfError(w->Append("abc"));
  ThrowIfError(w->Close());
  EXPECT_EQ(fs.Contents("out"), "abc");
  EXPECT_THROW(fs.NewSequentialFile("nope"), Error);
}

}  // namespace file_test
}  // namespace shardflow::io
