#include "comm/allreduce_recursive_doubling.hpp"

namespace shardflow::comm {
namespace {

constexpr int kFoldTag = 0x5f20;
constexpr int kExchangeTag = 0x5f21;
constexpr int kUnfoldTag = 0x5f22;

void AddInto(float* dst, const float* src, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] += src[i];
}

}  // namespace

void AllreduceRecursiveDoubling(Communicator& comm, float* data, size_t count,
                                const AllreduceOptions&) {
  const int n = comm.size();
  if (n == 1 || count == 0) return;
  const int r = comm.rank();
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int rem = n - p;
  auto* tmp = static_cast<float*>(comm.Scratch(count * sizeof(float)));
  RequestList requests;

  int q = -1;  // new rank in the power-of-two group, -1 while sitting out
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      comm.PostSend(data, count, MPI_FLOAT, sizeof(float), r + 1, kFoldTag, requests);
      comm.WaitAll(requests);
    } else {
      comm.PostRecv(tmp, count, MPI_FLOAT, sizeof(float), r - 1, kFoldTag, requests);
      comm.WaitAll(requests);
      AddInto(data, tmp, count);
      q = r / 2;
    }
  } else {
    q = r - rem;
  }

  if (q >= 0) {
    for (int mask = 1; mask < p; mask <<= 1) {
      const int partner_q = q ^ mask;
      const int partner = partner_q < rem ? partner_q * 2 + 1 : partner_q + rem;
      comm.SendRecv(data, count, partner, tmp, count, partner, MPI_FLOAT, sizeof(float),
                    kExchangeTag);
      AddInto(data, tmp, count);
    }
  }

  if (r < 2 * rem) {
    if (r % 2 == 1) {
      comm.PostSend(data, count, MPI_FLOAT, sizeof(float), r - 1, kUnfoldTag, requests);
    } else {
      comm.PostRecv(data, count, MPI_FLOAT, sizeof(float), r + 1, kUnfoldTag, requests);
    }
    comm.WaitAll(requests);
  }
}

}  // namespace shardflow::comm
