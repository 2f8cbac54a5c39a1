// The listening socket: a taken port is refused naming the port and the process holding it
// (this test's own), also when the first socket was bound with SO_REUSEPORT; serve.reuse_port
// on both sockets shares the port; FindPortHolder reads /proc.
#include "apps/serve/listen_socket.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/error.hpp"

namespace shardflow::serve {
namespace listen_socket_test {

std::string OwnName() {
  std::ifstream in("/proc/self/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

TEST(ListenSocket, TakenPortIsRefusedNamingThePortAndItsHolder) {
  for (const bool first_reuses : {false, true}) {
    const ListenSocket first = OpenListenSocket("127.0.0.1", 0, first_reuses, 16);
    ASSERT_GT(first.port(), 0);
    try {
      OpenListenSocket("127.0.0.1", first.port(), /*reuse_port=*/false, 16);
      FAIL() << "a second socket bound the taken port " << first.port();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      const std::string want = "port " + std::to_string(first.port()) +
                               " on 127.0.0.1 is in use, held by pid " +
                               std::to_string(::getpid()) + " (" + OwnName() + ")";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_EQ(e.context().key, "--port");
    }
  }
}

TEST(ListenSocket, ReusePortOnBothSharesThePort) {
  const ListenSocket first = OpenListenSocket("127.0.0.1", 0, true, 16);
  const ListenSocket second = OpenListenSocket("127.0.0.1", first.port(), true, 16);
  EXPECT_EQ(second.port(), first.port());
}

TEST(ListenSocket, FindsTheHolderOfAListeningPortOnly) {
  ListenSocket s = OpenListenSocket("127.0.0.1", 0, false, 16);
  const int port = s.port();
  const std::optional<PortHolder> holder = FindPortHolder(port);
  ASSERT_TRUE(holder.has_value());
  EXPECT_EQ(holder->pid, ::getpid());
  s.Close();
  EXPECT_FALSE(FindPortHolder(port).has_value());
}

TEST(ListenSocket, AnAddressNotOfThisMachineNamesHost) {
  try {
    OpenListenSocket("192.0.2.1", 0, false, 16);  // TEST-NET-1: never local
    FAIL() << "bound 192.0.2.1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 192.0.2.1:0"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.context().key, "--host");
  }
}

}  // namespace listen_socket_test
}  // namespace shardflow::serve
