#include <gtest/gtest.h>

#include <string>

#include "core/check_hdf5.hpp"
#include "core/check_zlib.hpp"
#include "core/error.hpp"

namespace shardflow {
namespace check_macros_test {

TEST(CheckHdf5Test, CapturesHdf5ErrorStackAndPrintsNothing) {
  ::testing::internal::CaptureStderr();
  std::string what;
  try {
    SF_CHECK_H5(H5Fopen("/nonexistent/shardflow.h5", H5F_ACC_RDONLY, H5P_DEFAULT),
                .file = "/nonexistent/shardflow.h5");
  } catch (const Error& e) {
    what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(what.find("H5Fopen"), std::string::npos) << what;
  EXPECT_NE(what.find("HDF5: "), std::string::npos) << what;
  EXPECT_NE(what.find("unable to open file"), std::string::npos) << what;
  EXPECT_NE(what.find("file=/nonexistent/shardflow.h5"), std::string::npos) << what;
  EXPECT_EQ(printed, "") << "HDF5 printed its own error stack";
  // The stack was cleared: a later walk finds nothing.
  EXPECT_EQ(TakeHdf5ErrorStack(), "no HDF5 error stack");
}

TEST(CheckHdf5Test, PassesResultThrough) {
  const hid_t plist = SF_CHECK_H5(H5Pcreate(H5P_FILE_ACCESS));
  EXPECT_GE(plist, 0);
  SF_CHECK_H5(H5Pclose(plist));
}

TEST(CheckZlibTest, DataErrorIsDataLoss) {
  z_stream stream{};
  ASSERT_EQ(inflateInit(&stream), Z_OK);
  unsigned char garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  unsigned char out[64];
  stream.next_in = garbage;
  stream.avail_in = sizeof(garbage);
  stream.next_out = out;
  stream.avail_out = sizeof(out);
  try {
    SF_CHECK_ZLIB(inflate(&stream, Z_NO_FLUSH), &stream);
    FAIL() << "expected a throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(std::string(e.what()).find("zlib: data error"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("incorrect header check"), std::string::npos) << e.what();
  }
  inflateEnd(&stream);
}

}  // namespace check_macros_test
}  // namespace shardflow
