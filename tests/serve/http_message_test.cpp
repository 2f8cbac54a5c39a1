// RequestParser: requests framed by Content-Length and by chunks, fed whole or a byte at a
// time; the errors (a Content-Length that is not a number, conflicting framings, bodies over
// the limit naming both sizes, oversized headers, unknown versions and codings) each with its
// status and a message naming the header; a pipelined second request left unconsumed; the
// Content-Type ignored (a form-encoded JSON body over 8 KiB is read like any other).
#include "apps/serve/http_message.hpp"

#include <gtest/gtest.h>

namespace shardflow::serve {
namespace http_message_test {

struct Parsed {
  RequestParser::Status status = RequestParser::Status::kNeedMore;
  HttpRequest request;
  HttpError error;
  size_t consumed = 0;
};

// Feeds `text` whole (step 0) or `step` bytes at a time, as a connection's buffer grows.
Parsed Parse(const std::string& text, int64_t max_body = 1 << 20, size_t step = 0) {
  RequestParser parser(max_body);
  Parsed out;
  std::string buffer;
  size_t fed = 0;
  while (fed < text.size()) {
    const size_t n = step == 0 ? text.size() - fed : std::min(step, text.size() - fed);
    buffer.append(text, fed, n);
    fed += n;
    size_t consumed = 0;
    out.status = parser.Feed(buffer, &consumed);
    buffer.erase(0, consumed);
    out.consumed += consumed;
    if (out.status != RequestParser::Status::kNeedMore) break;
  }
  if (out.status == RequestParser::Status::kComplete) out.request = parser.TakeRequest();
  if (out.status == RequestParser::Status::kError) out.error = parser.error();
  return out;
}

TEST(HttpMessage, ReadsAGetRequest) {
  const Parsed p = Parse("GET /v1/models/default?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_EQ(p.status, RequestParser::Status::kComplete);
  EXPECT_EQ(p.request.method, "GET");
  EXPECT_EQ(p.request.target, "/v1/models/default?x=1");
  EXPECT_EQ(p.request.path, "/v1/models/default");
  ASSERT_NE(p.request.Header("host"), nullptr);
  EXPECT_EQ(*p.request.Header("host"), "a");
  EXPECT_TRUE(p.request.keep_alive);
  EXPECT_TRUE(p.request.body.empty());
}

TEST(HttpMessage, ReadsAContentLengthBodyFedAByteAtATime) {
  const std::string text =
      "\r\nPOST /v1/models/m%3Ax:predict HTTP/1.1\r\nContent-Length: 11\r\n"
      "Connection: close\r\n\r\n{\"a\": [1] }";
  for (const size_t step : {size_t{0}, size_t{1}, size_t{7}}) {
    const Parsed p = Parse(text, 1 << 20, step);
    ASSERT_EQ(p.status, RequestParser::Status::kComplete) << step;
    EXPECT_EQ(p.request.body, "{\"a\": [1] }");
    EXPECT_EQ(p.request.path, "/v1/models/m:x:predict");
    EXPECT_FALSE(p.request.keep_alive);
    EXPECT_EQ(p.consumed, text.size());
  }
}

TEST(HttpMessage, IgnoresTheContentTypeOfAFormEncodedBodyOver8KiB) {
  const std::string body = "{\"instances\": [" + std::string(9000, ' ') + "]}";
  const Parsed p = Parse(
      "POST /p HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_EQ(p.status, RequestParser::Status::kComplete);
  EXPECT_EQ(p.request.body, body);
}

TEST(HttpMessage, ReadsAChunkedBody) {
  const std::string text =
      "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4;ext=1\r\n{\"a\"\r\n9\r\n: [1, 2]}\r\n0\r\nX-Trailer: t\r\n\r\n";
  for (const size_t step : {size_t{0}, size_t{1}, size_t{5}}) {
    const Parsed p = Parse(text, 1 << 20, step);
    ASSERT_EQ(p.status, RequestParser::Status::kComplete) << step;
    EXPECT_EQ(p.request.body, "{\"a\": [1, 2]}");
    EXPECT_EQ(p.consumed, text.size());
  }
}

TEST(HttpMessage, LeavesAPipelinedRequestUnconsumed) {
  const std::string first = "GET /a HTTP/1.1\r\n\r\n";
  const Parsed p = Parse(first + "GET /b HTTP/1.1\r\n\r\n");
  ASSERT_EQ(p.status, RequestParser::Status::kComplete);
  EXPECT_EQ(p.request.path, "/a");
  EXPECT_EQ(p.consumed, first.size());
}

TEST(HttpMessage, KeepAliveFollowsTheVersionAndConnectionHeader) {
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n").request.keep_alive);
}

TEST(HttpMessage, ExpectContinueIsSeenOnceTheHeadersAreRead) {
  RequestParser parser(100);
  const std::string head = "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  size_t consumed = 0;
  EXPECT_EQ(parser.Feed(head, &consumed), RequestParser::Status::kNeedMore);
  EXPECT_TRUE(parser.expects_continue());
  EXPECT_TRUE(parser.started());
  EXPECT_EQ(parser.Feed("{}", &consumed), RequestParser::Status::kComplete);
  EXPECT_FALSE(parser.expects_continue());
}

void ExpectError(const std::string& text, int status, const std::string& message,
                 int64_t max_body = 1 << 20) {
  const Parsed p = Parse(text, max_body);
  ASSERT_EQ(p.status, RequestParser::Status::kError) << text;
  EXPECT_EQ(p.error.status, status) << text;
  EXPECT_NE(p.error.message.find(message), std::string::npos) << p.error.message;
}

TEST(HttpMessage, RefusesABadContentLengthNamingTheHeader) {
  ExpectError("POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n{}", 400,
              "bad Content-Length header \"abc\": expected a decimal byte count");
  ExpectError("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "Content-Length");
  ExpectError("POST / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n", 400, "Content-Length");
  ExpectError("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", 400,
              "conflicting Content-Length headers \"2\" and \"3\"");
  ExpectError("POST / HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
              "both Content-Length and Transfer-Encoding");
}

TEST(HttpMessage, RefusesABodyOverTheLimitNamingBothSizes) {
  ExpectError("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413,
              "request body of 101 bytes (Content-Length) exceeds serve.max_body_bytes (100 "
              "bytes)",
              100);
  ExpectError("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'x') +
                  "\r\n40\r\n",
              413, "request body of at least 128 bytes (chunked) exceeds serve.max_body_bytes",
              100);
}

TEST(HttpMessage, RefusesMalformedRequests) {
  ExpectError("GARBAGE\r\n\r\n", 400, "malformed request line \"GARBAGE\"");
  ExpectError("GET /a b HTTP/1.1\r\n\r\n", 400, "malformed request line");
  ExpectError("GET nopath HTTP/1.1\r\n\r\n", 400, "malformed request line");
  ExpectError("GET / HTTP/2.0\r\n\r\n", 505, "HTTP version \"HTTP/2.0\" not supported");
  ExpectError("GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 400, "malformed header line");
  ExpectError("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400, "obsolete line folding");
  ExpectError("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
              "Transfer-Encoding \"gzip\" not supported");
  ExpectError("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400,
              "bad chunk size \"zz\"");
  ExpectError("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 400,
              "chunk data longer than its size");
  // 26 hex digits overflowed int64 before they were counted (found by fuzz_http_request).
  ExpectError(
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(26, '6') + "\r\n", 400,
      "bad chunk size");
  ExpectError(
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;" + std::string(1100, 'e') + "\r\n",
      400, "a chunk size line over 1024 bytes");
  ExpectError("GET / HTTP/1.1\r\nX: " + std::string(kMaxHeaderBytes, 'x'), 431,
              "request line and headers exceed 65536 bytes");
}

TEST(HttpMessage, GarbageIsRefusedOnceItsFirstLineIsWhole) {
  const Parsed p = Parse(std::string("\x16\x03\x01 TLS hello\r\nmore bytes, no blank line"));
  ASSERT_EQ(p.status, RequestParser::Status::kError);
  EXPECT_EQ(p.error.status, 400);
}

TEST(HttpMessage, IncompleteInputNeedsMore) {
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nHost: a\r\n").status, RequestParser::Status::kNeedMore);
  EXPECT_EQ(Parse("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab").status,
            RequestParser::Status::kNeedMore);
}

TEST(HttpMessage, SerializesAResponse) {
  HttpResponse r;
  r.status = 503;
  r.body = "{}";
  r.headers.emplace_back("Retry-After", "1");
  EXPECT_EQ(SerializeResponse(r, false),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\nConnection: close\r\nRetry-After: 1\r\n\r\n{}");
  EXPECT_NE(SerializeResponse(r, true).find("Connection: keep-alive\r\n"), std::string::npos);
}

}  // namespace http_message_test
}  // namespace shardflow::serve
