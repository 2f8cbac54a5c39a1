#include "core/error.hpp"

#include <gtest/gtest.h>

namespace shardflow {
namespace error_test {

TEST(ErrorTest, RendersCategoryMessageAndContextOnOneLine) {
  Error e(ErrorCode::kDataLoss, "bad data CRC",
          {.file = "a.tfrecord", .offset = 1234, .record = 7, .hint = "re-create the file"});
  EXPECT_STREQ(e.what(),
               "data loss: bad data CRC [file=a.tfrecord offset=1234 record=7] hint: re-create "
               "the file");
  EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
  EXPECT_EQ(*e.context().offset, 1234u);
}

TEST(ErrorTest, OmitsUnsetContext) {
  EXPECT_STREQ(Error(ErrorCode::kInternal, "boom").what(), "internal error: boom");
  EXPECT_STREQ(Error(ErrorCode::kNotFound, "no key", {.rank = 3, .key = "train.lr"}).what(),
               "not found: no key [rank=3 key=train.lr]");
}

TEST(ErrorTest, OffsetAndRecordZeroArePrinted) {
  Error e(ErrorCode::kDataLoss, "truncated", {.offset = 0, .record = 0});
  EXPECT_STREQ(e.what(), "data loss: truncated [offset=0 record=0]");
}

TEST(ErrorTest, StatusOkAndThrowIfError) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "ok");
  EXPECT_NO_THROW(ThrowIfError(Status::Ok()));
  try {
    ThrowIfError(Status(ErrorCode::kIo, "read failed", {.file = "x"}));
    FAIL() << "expected a throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_STREQ(e.what(), "I/O error: read failed [file=x]");
  }
}

TEST(ErrorTest, ExitCodes) {
  EXPECT_EQ(ExitCodeFor(ErrorCode::kOk), 0);
  EXPECT_EQ(ExitCodeFor(ErrorCode::kInvalidArgument), 2);
  EXPECT_EQ(ExitCodeFor(ErrorCode::kNotFound), 2);
  EXPECT_EQ(ExitCodeFor(ErrorCode::kDataLoss), 3);
  EXPECT_EQ(ExitCodeFor(ErrorCode::kIo), 1);
  EXPECT_EQ(ExitCodeFor(ErrorCode::kCommunication), 1);
  EXPECT_EQ(ExitCodeFor(ErrorCode::kInternal), 1);
}

}  // namespace error_test
}  // namespace shardflow
