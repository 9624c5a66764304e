// The model catalogue is data a user follows to fetch a model: it must parse and its
// checksum must describe the real file.
#include <doctest/doctest.h>

#include <filesystem>
#include <toml++/toml.h>

#include "common/sha256.h"
#include "test_util.h"

using namespace kvrt;

TEST_CASE("sha256 matches the FIPS 180-4 examples") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE(
    "models/catalogue.toml lists stories260K, and every vendored model with the checksum and size "
    "of the real file") {
  toml::table cat = toml::parse_file(test::models_dir() + "/catalogue.toml");
  const toml::array* models = cat["model"].as_array();
  REQUIRE(models);
  bool found = false;
  for (const auto& entry : *models) {
    const toml::table& m = *entry.as_table();
    CHECK(m["sha256"].value<std::string>().value_or("").size() == 64);
    CHECK(m["source"].value<std::string>().has_value());
    CHECK(m["licence"].value<std::string>().has_value());
    if (m["vendored"].value_or(false)) {  // in models/, with its licence file beside it
      const std::string path = test::models_dir() + "/" + m["file"].value_or(std::string());
      CAPTURE(path);
      REQUIRE(std::filesystem::is_regular_file(path));
      CHECK(std::filesystem::is_regular_file(test::models_dir() + "/" +
                                             m["licence_file"].value_or(std::string())));
      CHECK(std::filesystem::file_size(path) == m["size"].value<int64_t>().value_or(-1));
      CHECK(sha256_file(path) == m["sha256"].value<std::string>().value_or(""));
    }
    if (m["name"].value<std::string>() != "stories260K") continue;
    CHECK(m["vendored"].value_or(false));
    CHECK(m["file"].value<std::string>() ==
          std::filesystem::path(test::stories_path()).filename().string());
    found = true;
  }
  CHECK(found);
}
