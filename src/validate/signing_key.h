// Ed25519 keys (libsodium) that sign validation records for fleets: a vendor validates once per
// device class with `kvrt validate --sign KEYFILE`, ships the record in the image, and devices run
// with `kvrt run --trust PUBKEY`, which accepts only records signed by that key.
//
// Key files are small text files (docs/signed-records.md): lines starting with '#' are comments,
// and one line holds the key's type and its 32 bytes in hex:
//   kvrt-ed25519-secret-key <64 hex digits: the key's seed>
//   kvrt-ed25519-public-key <64 hex digits: the public key>
// `kvrt keygen` creates secret key files with mode 0600; a secret key file that other users may
// read or write, or that is not a regular file, is refused.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvrt::validate {

struct PublicKey {
  std::array<uint8_t, 32> bytes{};

  std::string hex() const;  // 64 lowercase hex digits, as key files and records write it
  std::string id()
      const;  // the first 16 hex digits of the SHA-256 of the key's bytes, for messages
  bool operator==(const PublicKey&) const = default;
};

// A secret key in memory; its bytes are wiped when it goes away.
class SecretKey {
 public:
  SecretKey() = default;
  ~SecretKey();
  SecretKey(SecretKey&& o) noexcept;  // wipes `o`
  SecretKey(const SecretKey&) = delete;
  SecretKey& operator=(const SecretKey&) = delete;
  SecretKey& operator=(SecretKey&&) = delete;

  static SecretKey generate();
  static SecretKey from_seed(const std::array<uint8_t, 32>& seed);
  const PublicKey& public_key() const { return public_; }
  std::string seed_hex() const;  // what a secret key file holds
  // The 64-byte Ed25519 signature of `message`.
  std::array<uint8_t, 64> sign(std::string_view message) const;

 private:
  std::array<uint8_t, 64> secret_{};  // libsodium's form: the seed, then the public key
  PublicKey public_;
};

// Whether `signature` is a valid Ed25519 signature of `message` by `key`.
bool verify_signature(const PublicKey& key, std::string_view message,
                      const std::array<uint8_t, 64>& signature);

// Reads a key file. Throws kvrt::Error(kInput) naming the file (and the line) for a missing,
// special or malformed file, and for a secret key file other users may read or write.
PublicKey read_public_key(const std::string& path);
SecretKey read_secret_key(const std::string& path);

// Writes a new key pair: the secret key to `secret_path` (mode 0600) and the public key to
// `secret_path` + ".pub" (mode 0644). Each file is created whole or not at all, and an existing
// file is never replaced: kvrt::Error(kUsage) names it.
void write_key_pair(const SecretKey& key, const std::string& secret_path);

// Lowercase hex of `n` bytes, and its inverse (false for anything but exactly 2n hex digits).
std::string to_hex(const uint8_t* bytes, size_t n);
bool from_hex(std::string_view hex, uint8_t* bytes, size_t n);

}  // namespace kvrt::validate
