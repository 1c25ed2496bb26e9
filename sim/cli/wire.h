// Values as bytes for messages between the ranks of an MPI job (ranks.h): every rank runs the
// same executable on the same kind of machine, so numbers travel in their native layout and
// doubles arrive bit for bit as they were computed.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "sim/error.h"

namespace bubblesim::cli {

// Appends values to a byte string.
class WireWriter {
 public:
  template <typename T>
  void number(T value) {
    static_assert(std::is_arithmetic_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void text(const std::string& s) {
    number<std::uint64_t>(s.size());
    bytes_ += s;
  }
  // Room for `n` bytes in all, so that a large message is not copied as it grows.
  void reserve(std::size_t n) { bytes_.reserve(n); }
  const std::string& bytes() const { return bytes_; }
  // The bytes, moved out.
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

// Reads back what a WireWriter wrote, in the same order. A message too short for what is read
// is an InternalError (the ranks disagree about the protocol).
class WireReader {
 public:
  explicit WireReader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T number() {
    static_assert(std::is_arithmetic_v<T>);
    T value;
    need(sizeof value);
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  std::string text() {
    const auto n = number<std::uint64_t>();
    need(n);
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void need(std::size_t n) const {
    if (n > bytes_.size() - at_) throw InternalError("a message between ranks is truncated");
  }
  const std::string& bytes_;
  std::size_t at_ = 0;
};

}  // namespace bubblesim::cli
