// Little-endian binary records in memory: a writer that appends to a string and a reader that
// checks every read against the end of its bytes (kvrt::Error naming what was cut off). The state
// files of docs/formats/state-file.md are written and read with them.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/error.h"

namespace kvrt {

static_assert(std::endian::native == std::endian::little,
              "kvrt's binary files are little-endian, as its targets are");

// Appends to a string, writes into a caller's buffer of a known capacity, or only counts (the
// size of what would be written, with nothing copied).
class ByteWriter {
 public:
  ByteWriter() = default;  // counts
  explicit ByteWriter(std::string& out) : str_(&out) {}
  ByteWriter(void* buffer, size_t capacity) : buf_(static_cast<uint8_t*>(buffer)), cap_(capacity) {}
  template <typename T>
  void put(T v) {
    static_assert(std::is_arithmetic_v<T>);
    put_bytes(&v, sizeof v);
  }
  void put_bytes(const void* p, size_t n) {
    if (str_) str_->append(static_cast<const char*>(p), n);
    if (buf_) {
      KVRT_ASSERT(n <= cap_ - n_);
      if (n > 0) std::memcpy(buf_ + n_, p, n);
    }
    n_ += n;
  }
  void put_string(std::string_view s) {  // u32 length, then the bytes
    put(static_cast<uint32_t>(s.size()));
    put_bytes(s.data(), s.size());
  }
  size_t size() const { return n_; }  // bytes written (or counted) by this writer

 private:
  std::string* str_ = nullptr;
  uint8_t* buf_ = nullptr;
  size_t cap_ = 0;
  size_t n_ = 0;
};

class ByteReader {
 public:
  // `what` names the bytes in errors, e.g. "state file 'boot.kvs'".
  ByteReader(std::string_view bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}
  template <typename T>
  T get(const char* field) {
    static_assert(std::is_arithmetic_v<T>);
    T v;
    std::memcpy(&v, take(sizeof v, field), sizeof v);
    return v;
  }
  const uint8_t* take(size_t n, const char* field) {  // n bytes in place
    if (n > bytes_.size() - pos_)
      throw Error(what_ + " ends inside its " + field + " (byte " + std::to_string(pos_) + " of " +
                  std::to_string(bytes_.size()) + ")");
    const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes_.data()) + pos_;
    pos_ += n;
    return p;
  }
  std::string get_string(const char* field, size_t max_size) {
    const uint32_t n = get<uint32_t>(field);
    if (n > max_size)
      throw Error(what_ + " has a " + field + " of " + std::to_string(n) +
                  " bytes, more than the " + std::to_string(max_size) + " allowed");
    return std::string(reinterpret_cast<const char*>(take(n, field)), n);
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  const std::string& what() const { return what_; }

 private:
  std::string_view bytes_;
  std::string what_;
  size_t pos_ = 0;
};

}  // namespace kvrt
