// SHA-256 (FIPS 180-4), used to bind validation records to the exact model and data files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvrt {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::string hex_digest();  // 64 lowercase hex digits; finishes the hash

 private:
  void block(const uint8_t* p);  // one 64-byte block
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);
std::string sha256_file(const std::string& path);  // throws kvrt::Error naming the file

}  // namespace kvrt
