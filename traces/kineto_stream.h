// The gzip stream of the Kineto importer (traces/kineto_trace.cpp): a RapidJSON input stream
// over zlib's gzread, plain JSON read as well. Internal to traces/.
#pragma once

#include <rapidjson/reader.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "traces/kineto_trace.h"

namespace bubblesim::traces {

// A RapidJSON input stream over gzread, in the manner of rapidjson::FileReadStream: the
// buffer ends with a '\0' sentinel once the input is exhausted, so Peek is one load.
class InflatingStream {
 public:
  using Ch = char;

  explicit InflatingStream(const std::string& path)
      : path_(path), file_(gzopen(path.c_str(), "rb"), &gzclose), buffer_(kBufferBytes + 1) {
    if (!file_) throw TraceFormatError(path + ": cannot open: " + std::strerror(errno));
    gzbuffer(file_.get(), kBufferBytes);
    compressed_ = gzdirect(file_.get()) == 0;  // looks at the header, before any read
    fill();
    // A UTF-8 byte order mark, which RFC 8259 lets a parser ignore (Windows tools write one);
    // offsets in errors still count it.
    if (read_ >= 3 && std::memcmp(buffer_.data(), "\xEF\xBB\xBF", 3) == 0) current_ += 3;
  }

  Ch Peek() const { return *current_; }
  Ch Take() {
    const Ch c = *current_;
    if (current_ < last_) {
      ++current_;
    } else if (!eof_) {
      fill();
    }
    return c;
  }
  // RapidJSON's SkipWhitespace, without reloading the position for every character. The
  // reader calls it around every token, mostly where there is none: that case is one table
  // look-up, inlined into the reader; the loop stays out of line.
  void skip_whitespace() {
    if (is_space(*current_)) skip_spaces();
  }

  std::size_t Tell() const {
    return consumed_ + static_cast<std::size_t>(current_ - buffer_.data());
  }

  // The stream concept requires them; a reader that is not in situ never calls them.
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  std::size_t PutEnd(Ch*) { return 0; }

  // "FILE: byte N of the decompressed stream" (plain files: "FILE: byte N").
  std::string at(std::size_t offset) const {
    return path_ + ": byte " + std::to_string(offset) +
           (compressed_ ? " of the decompressed stream" : "");
  }

 private:
  static constexpr unsigned kBufferBytes = 1u << 18;

  static bool is_space(char c) {
    static constexpr auto kSpace = [] {
      std::array<bool, 256> table{};
      for (const unsigned char w : {' ', '\n', '\r', '\t'})
        table[w] = true;
      return table;
    }();
    return kSpace[static_cast<unsigned char>(c)];
  }

  [[gnu::noinline]] void skip_spaces() {
    for (;;) {
      char* p = current_;
      while (p < last_ && is_space(*p))
        ++p;
      current_ = p;
      if (p < last_ || eof_ || !is_space(*p)) return;
      fill();  // the last character of the buffer was whitespace too
    }
  }

  void fill() {
    consumed_ += read_;
    const int n = gzread(file_.get(), buffer_.data(), kBufferBytes);
    int code = Z_OK;
    const char* message = gzerror(file_.get(), &code);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      throw TraceFormatError(at(consumed_ + static_cast<std::size_t>(std::max(n, 0))) + ": " +
                             (code == Z_BUF_ERROR ? "the gzip stream is truncated"
                                                  : std::string("cannot decompress: ") + message));
    }
    read_ = static_cast<std::size_t>(n);
    current_ = buffer_.data();
    eof_ = read_ < kBufferBytes;
    if (eof_) buffer_[read_] = '\0';
    last_ = buffer_.data() + (eof_ ? read_ : read_ - 1);  // the sentinel, or the last byte
  }

  std::string path_;
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file_;
  bool compressed_ = false;
  std::vector<char> buffer_;
  char* current_ = nullptr;
  char* last_ = nullptr;
  std::size_t read_ = 0;      // bytes in the buffer
  std::size_t consumed_ = 0;  // bytes before the buffer
  bool eof_ = false;
};

// Found by argument-dependent lookup from rapidjson::GenericReader, in preference to
// rapidjson's generic template.
inline void SkipWhitespace(InflatingStream& is) {
  is.skip_whitespace();
}

}  // namespace bubblesim::traces
