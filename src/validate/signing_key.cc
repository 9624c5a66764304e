#include "validate/signing_key.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/regular_file.h"
#include "common/sha256.h"
#include "validate/output_file.h"

namespace kvrt::validate {
namespace {

constexpr std::string_view kSecretType = "kvrt-ed25519-secret-key";
constexpr std::string_view kPublicType = "kvrt-ed25519-public-key";
constexpr size_t kMaxKeyFileBytes = 4096;

void init_sodium() {
  if (sodium_init() < 0) throw Error("libsodium cannot be initialised", ErrorKind::kInternal);
}

[[noreturn]] void bad_key_file(const std::string& path, int line, const std::string& why) {
  throw Error("key file '" + path + "'" + (line > 0 ? ":" + std::to_string(line) : "") + ": " +
              why);
}

// The 32 bytes of the one key line of `text`, whose type must be `type`.
std::array<uint8_t, 32> parse_key_text(const std::string& text, std::string_view type,
                                       const std::string& path) {
  std::array<uint8_t, 32> bytes{};
  int n_keys = 0, line_no = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const size_t space = line.find(' ');
    const std::string_view word = line.substr(0, space);
    if (word != type) {
      const bool other = word == kSecretType || word == kPublicType;
      bad_key_file(path, line_no,
                   other ? "holds a " + std::string(word) + ", not a " + std::string(type)
                         : "expected '" + std::string(type) + " <64 hex digits>'");
    }
    if (++n_keys > 1) bad_key_file(path, line_no, "holds more than one key");
    if (space == std::string_view::npos ||
        !from_hex(line.substr(space + 1), bytes.data(), bytes.size()))
      bad_key_file(path, line_no,
                   "the key must be exactly 64 hex digits after '" + std::string(type) + " '");
  }
  if (n_keys == 0) bad_key_file(path, 0, "holds no '" + std::string(type) + "' line");
  return bytes;
}

// Creates `path` holding `text` with permissions `mode`, whole or not at all: written unnamed
// (O_TMPFILE) and then linked, which fails rather than replace an existing file; where O_TMPFILE
// is not supported, created exclusively and removed again if writing fails.
void create_file(const std::string& path, const std::string& text, mode_t mode) {
  const std::filesystem::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  auto fail = [&](int err) {
    throw Error("cannot write key file '" + path + "': " + std::strerror(err),
                err == EEXIST ? ErrorKind::kUsage : ErrorKind::kInput);
  };
  auto write_key = [&](int fd) { return ::fchmod(fd, mode) == 0 && write_all(fd, text); };
  {
    const FileHandle f(::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, mode));
    if (f.fd() >= 0) {
      if (!write_key(f.fd())) fail(errno);
      const std::string proc = "/proc/self/fd/" + std::to_string(f.fd());
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0)
        fail(errno);
      return;
    }
  }
  const FileHandle f(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (f.fd() < 0) fail(errno);
  if (!write_key(f.fd())) {
    const int err = errno;
    ::unlink(path.c_str());
    fail(err);
  }
}

std::string key_file_text(std::string_view type, const std::string& hex, const PublicKey& pub,
                          const char* what) {
  return std::string("# kvrt Ed25519 ") + what +
         " (kvrt keygen; docs/signed-records.md)\n# key id " + pub.id() + "\n" + std::string(type) +
         " " + hex + "\n";
}

}  // namespace

std::string to_hex(const uint8_t* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[bytes[i] >> 4];
    s[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return s;
}

bool from_hex(std::string_view hex, uint8_t* bytes, size_t n) {
  if (hex.size() != 2 * n) return false;
  auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < n; ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    bytes[i] = uint8_t(hi * 16 + lo);
  }
  return true;
}

std::string PublicKey::hex() const { return to_hex(bytes.data(), bytes.size()); }

std::string PublicKey::id() const {
  return sha256_hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()))
      .substr(0, 16);
}

SecretKey::~SecretKey() { sodium_memzero(secret_.data(), secret_.size()); }

SecretKey::SecretKey(SecretKey&& o) noexcept : secret_(o.secret_), public_(o.public_) {
  sodium_memzero(o.secret_.data(), o.secret_.size());
}

// libsodium's secret key is the seed followed by the public key.
std::string SecretKey::seed_hex() const { return to_hex(secret_.data(), 32); }

SecretKey SecretKey::generate() {
  init_sodium();
  std::array<uint8_t, 32> seed{};
  randombytes_buf(seed.data(), seed.size());
  SecretKey k = from_seed(seed);
  sodium_memzero(seed.data(), seed.size());
  return k;
}

SecretKey SecretKey::from_seed(const std::array<uint8_t, 32>& seed) {
  init_sodium();
  SecretKey k;
  crypto_sign_seed_keypair(k.public_.bytes.data(), k.secret_.data(), seed.data());
  return k;
}

std::array<uint8_t, 64> SecretKey::sign(std::string_view message) const {
  std::array<uint8_t, 64> sig{};
  crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const uint8_t*>(message.data()),
                       message.size(), secret_.data());
  return sig;
}

bool verify_signature(const PublicKey& key, std::string_view message,
                      const std::array<uint8_t, 64>& signature) {
  init_sodium();
  return crypto_sign_verify_detached(signature.data(),
                                     reinterpret_cast<const uint8_t*>(message.data()),
                                     message.size(), key.bytes.data()) == 0;
}

PublicKey read_public_key(const std::string& path) {
  PublicKey k;
  k.bytes = parse_key_text(read_regular_file(path, "public key file", kMaxKeyFileBytes),
                           kPublicType, path);
  return k;
}

SecretKey read_secret_key(const std::string& path) {
  const FileHandle f = open_regular_file(path, "secret key file");
  struct stat st {};
  if (::fstat(f.fd(), &st) != 0) bad_key_file(path, 0, std::strerror(errno));
  if (st.st_mode & (S_IROTH | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    bad_key_file(path, 0,
                 std::string("other users may read or write this secret key (mode ") + mode +
                     "); make it private with chmod 600");
  }
  if (size_t(st.st_size) > kMaxKeyFileBytes)
    bad_key_file(path, 0, "is larger than a key file can be");
  std::string text(size_t(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(f.fd(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) bad_key_file(path, 0, n < 0 ? std::strerror(errno) : "it shrank while being read");
    done += size_t(n);
  }
  std::array<uint8_t, 32> seed = parse_key_text(text, kSecretType, path);
  sodium_memzero(text.data(), text.size());
  SecretKey key = SecretKey::from_seed(seed);
  sodium_memzero(seed.data(), seed.size());
  return key;
}

void write_key_pair(const SecretKey& key, const std::string& secret_path) {
  const std::string public_path = secret_path + ".pub";
  for (const std::string& p : {secret_path, public_path})
    if (!missing_file(p))
      throw Error("key file '" + p +
                      "' already exists; kvrt keygen never replaces a key (remove it or choose "
                      "another name)",
                  ErrorKind::kUsage);
  const PublicKey& pub = key.public_key();
  std::string secret_text =
      key_file_text(kSecretType, key.seed_hex(), pub, "secret key: keep it private");
  create_file(secret_path, secret_text, 0600);
  sodium_memzero(secret_text.data(), secret_text.size());
  try {
    create_file(public_path, key_file_text(kPublicType, pub.hex(), pub, "public key"), 0644);
  } catch (const Error&) {
    ::unlink(secret_path.c_str());
    throw;
  }
}

}  // namespace kvrt::validate
