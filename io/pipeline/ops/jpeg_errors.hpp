// libjpeg error handling shared by the JPEG codec (image_codec.cpp) and the window decoder
// (jpeg_window.cpp). Internal to io/pipeline/ops (the only includers of libjpeg).
//
// libjpeg reports fatal errors through error_exit, which must not return: JpegErrorExit jumps
// back to the setjmp of the caller (which must keep no C++ objects with destructors between its
// setjmp and the libjpeg calls). Warnings (libjpeg's level -1: premature end of data, bad
// Huffman codes, extraneous bytes) mean corrupt data that libjpeg would paper over: they fail
// the decode like an error, as TensorFlow's decode_jpeg does and djpeg's exit status says.
#pragma once

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <csetjmp>
#include <jpeglib.h>
// clang-format on

namespace shardflow::pipeline::jpeg_detail {

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

inline void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Trace messages (level >= 0) are dropped; a warning (level -1) is an error.
inline void JpegOnMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  JpegErrorExit(cinfo);
}

// Points cinfo's error manager at `err` with the handlers above.
inline void InstallJpegErrors(j_common_ptr cinfo, JpegError* err) {
  cinfo->err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = JpegErrorExit;
  err->mgr.emit_message = JpegOnMessage;
  err->message[0] = '\0';
}

}  // namespace shardflow::pipeline::jpeg_detail
