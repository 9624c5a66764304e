// kvrt keygen: a new Ed25519 key pair for signed validation records (docs/signed-records.md):
// KEYFILE holds the secret key (mode 0600; `kvrt validate --sign KEYFILE`), KEYFILE.pub the public
// key that devices trust (`kvrt run --trust KEYFILE.pub`).
#include <cstdio>

#include "command_line.h"
#include "commands.h"
#include "common/error.h"
#include "validate/signing_key.h"

namespace kvrt::cli {

int cmd_keygen(int argc, char** argv) {
  std::string path;
  CommandLine cl(
      "kvrt keygen -o KEYFILE",
      "Makes an Ed25519 key pair for signed validation records: KEYFILE is the secret key (mode\n"
      "0600; kvrt validate --sign KEYFILE), KEYFILE.pub the public key (kvrt run --trust\n"
      "KEYFILE.pub). Existing files are never replaced.");
  cl.add("-o,--output", "KEYFILE",
         "where to write the secret key; the public key goes to KEYFILE.pub", &path);
  if (!cl.parse(argc, argv)) return kExitOk;
  if (path.empty())
    throw Error("kvrt keygen needs -o KEYFILE, the secret key file to create", ErrorKind::kUsage);
  const validate::SecretKey key = validate::SecretKey::generate();
  validate::write_key_pair(key, path);
  std::printf("secret key: %s (keep it private)\npublic key: %s.pub\nkey id: %s\n", path.c_str(),
              path.c_str(), key.public_key().id().c_str());
  return kExitOk;
}

}  // namespace kvrt::cli
