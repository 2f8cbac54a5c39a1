// comm::MpiComm, MpiWin and MpiInfo on 1..4 ranks: each handle is freed exactly once (counted by
// an attribute's delete callback, which MPI runs when it frees the object), moves hand the
// handle over, out() frees the one held, Release gives it up unfreed, and a window whose owner
// is destroyed while an exception unwinds is left alone (the test frees it afterwards, on every
// rank alike).
#include "comm/mpi_handle.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>

namespace shardflow::comm {
namespace {

int CountCommDelete(MPI_Comm, int, void*, void* extra) {
  ++*static_cast<int*>(extra);
  return MPI_SUCCESS;
}

int CountWinDelete(MPI_Win, int, void*, void* extra) {
  ++*static_cast<int*>(extra);
  return MPI_SUCCESS;
}

// A duplicate of the world carrying the attribute `keyval`, whose delete callback counts frees.
MpiComm CountedDup(int keyval) {
  MpiComm comm;
  EXPECT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, comm.out()), MPI_SUCCESS);
  EXPECT_EQ(MPI_Comm_set_attr(comm.get(), keyval, nullptr), MPI_SUCCESS);
  return comm;
}

class CommKey {
 public:
  CommKey() { MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, CountCommDelete, &key, &deletes); }
  ~CommKey() { MPI_Comm_free_keyval(&key); }
  int deletes = 0;
  int key = MPI_KEYVAL_INVALID;
};

TEST(MpiHandle, CommIsFreedOnceByItsLastOwner) {
  CommKey key;
  {
    MpiComm a = CountedDup(key.key);
    ASSERT_TRUE(a);
    MpiComm b = std::move(a);
    EXPECT_FALSE(a);
    ASSERT_TRUE(b);
    int size = 0;
    ASSERT_EQ(MPI_Comm_size(b.get(), &size), MPI_SUCCESS);
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    EXPECT_EQ(size, world);
    MpiComm c;
    c = std::move(b);
    EXPECT_EQ(key.deletes, 0);
  }
  EXPECT_EQ(key.deletes, 1);
}

TEST(MpiHandle, CommResetOutAndRelease) {
  CommKey key;
  MpiComm a = CountedDup(key.key);
  a.Reset();
  EXPECT_FALSE(a);
  EXPECT_EQ(key.deletes, 1);
  a.Reset();  // nothing held: nothing freed
  EXPECT_EQ(key.deletes, 1);

  a = CountedDup(key.key);
  EXPECT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, a.out()), MPI_SUCCESS);  // frees the counted one
  EXPECT_EQ(key.deletes, 2);

  MpiComm b = CountedDup(key.key);
  MPI_Comm raw = b.Release();
  EXPECT_FALSE(b);
  EXPECT_EQ(key.deletes, 2);
  MPI_Comm_free(&raw);
  EXPECT_EQ(key.deletes, 3);
}

TEST(MpiHandle, CommIsFreedWhileAnExceptionUnwinds) {
  CommKey key;
  try {
    MpiComm a = CountedDup(key.key);
    throw std::runtime_error("this rank failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(key.deletes, 1);
}

class WinKey {
 public:
  WinKey() { MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, CountWinDelete, &key, &deletes); }
  ~WinKey() { MPI_Win_free_keyval(&key); }
  int deletes = 0;
  int key = MPI_KEYVAL_INVALID;
};

MpiWin CountedWindow(int keyval) {
  MpiWin win;
  void* base = nullptr;
  EXPECT_EQ(MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, win.out()), MPI_SUCCESS);
  EXPECT_EQ(MPI_Win_set_attr(win.get(), keyval, nullptr), MPI_SUCCESS);
  return win;
}

TEST(MpiHandle, WindowIsFreedOnceAndNotWhileAnExceptionUnwinds) {
  WinKey key;
  {
    MpiWin a = CountedWindow(key.key);
    MpiWin b = std::move(a);
    EXPECT_FALSE(a);
    EXPECT_EQ(key.deletes, 0);
  }
  EXPECT_EQ(key.deletes, 1);

  MPI_Win left = MPI_WIN_NULL;
  try {
    MpiWin a = CountedWindow(key.key);
    left = a.get();
    throw std::runtime_error("this rank failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(key.deletes, 1);  // the destructor left the window alone
  ASSERT_NE(left, MPI_WIN_NULL);
  MPI_Win_free(&left);  // every rank got here alike, so the collective free is safe
  EXPECT_EQ(key.deletes, 2);
}

TEST(MpiHandle, InfoOutAndMove) {
  MpiInfo a;
  ASSERT_EQ(MPI_Info_create(a.out()), MPI_SUCCESS);
  ASSERT_EQ(MPI_Info_set(a.get(), "key", "value"), MPI_SUCCESS);
  MpiInfo b = std::move(a);
  EXPECT_FALSE(a);
  int keys = 0;
  ASSERT_EQ(MPI_Info_get_nkeys(b.get(), &keys), MPI_SUCCESS);
  EXPECT_EQ(keys, 1);
  ASSERT_EQ(MPI_Info_create(b.out()), MPI_SUCCESS);  // frees the first
  ASSERT_EQ(MPI_Info_get_nkeys(b.get(), &keys), MPI_SUCCESS);
  EXPECT_EQ(keys, 0);
}

}  // namespace
}  // namespace shardflow::comm
