// The one text form of a KV setting (kv::parse_setting): the same parser behind --kv, bench
// --settings, kvrt_kv_config_parse and validation/settings.toml, and the canonical name it reads
// back.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "kv/kv_config.h"
#include "kvrt/kvrt.h"
#include "test_util.h"
#include "validate/settings.h"

using namespace kvrt;
using kv::Format;
using kv::KeyAxis;
using kv::KvConfig;

namespace {

bool same(const KvConfig& a, const KvConfig& b) { return a.name() == b.name(); }

std::string error_of(std::string_view text) {
  try {
    kv::parse_setting(text);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kUsage);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(
    "a setting is a format, then fields applied left to right; the canonical name reads back") {
  const KvConfig q8 = kv::parse_setting("q8");
  CHECK(q8.k_format == Format::kQ8);
  CHECK(q8.v_format == Format::kQ8);
  const KvConfig c = kv::parse_setting("q4,axis=channel,r=32");
  CHECK(c.k_format == Format::kQ4);
  CHECK(c.v_format == Format::kQ4);
  CHECK(c.k_axis == KeyAxis::kChannel);
  CHECK(c.residual == 32);
  const KvConfig full = kv::parse_setting("k=q4,v=q8,g=16,axis=channel,r=32,rot=1");
  CHECK(full.group_size == 16);
  CHECK(full.rotate);
  CHECK(full.name() == "k=q4,v=q8,g=16,axis=channel,r=32,rot=1");
  CHECK(same(kv::parse_setting(full.name()), full));
  CHECK(same(kv::parse_setting("rot=1,v=q8,k=q4,r=32,axis=channel,g=16"), full));  // any order
  CHECK(kv::parse_setting("q8,v=f32").v_format == Format::kF32);  // later fields win
  const KvConfig sym =
      kv::parse_setting("k=q4s,v=q4");  // the symmetric 4-bit format is its own name
  CHECK(sym.k_format == Format::kQ4S);
  CHECK(sym.v_format == Format::kQ4);
  CHECK(same(kv::parse_setting(sym.name()), sym));
  const KvConfig nonuniform = kv::parse_setting("k=q8,v=q4n");  // the non-uniform 4-bit format
  CHECK(nonuniform.v_format == Format::kQ4N);
  CHECK(nonuniform.name().rfind("k=q8,v=q4n,", 0) == 0);
  CHECK(same(kv::parse_setting(nonuniform.name()), nonuniform));
  const KvConfig three = kv::parse_setting("q3,axis=channel");  // the 3-bit format
  CHECK(three.k_format == Format::kQ3);
  CHECK(three.v_format == Format::kQ3);
  CHECK(three.name().rfind("k=q3,v=q3,", 0) == 0);
  CHECK(same(kv::parse_setting(three.name()), three));
}

TEST_CASE(
    "rotation is on by default for a setting that quantizes anything, and a name keeps its own") {
  CHECK(kv::parse_setting("q4").rotate);
  CHECK(kv::parse_setting("k=q8").rotate);  // values stay f32; the keys are quantized
  CHECK(kv::parse_setting("f32,layers[1]=q8").rotate);
  CHECK_FALSE(kv::parse_setting("f32").rotate);
  CHECK_FALSE(kv::parse_setting("q8,layers[0,-1]=f32,k=f32,v=f32").rotate);  // stores only f32
  CHECK_FALSE(kv::parse_setting("q4,rot=0").rotate);
  // rot=0 given before the formats still counts: the default only fills a field never given.
  CHECK_FALSE(kv::parse_setting("rot=0,k=q4,v=q4").rotate);
  CHECK(kv::parse_setting("q4").name() == "k=q4,v=q4,g=0,axis=token,r=0,rot=1");
  // A canonical name written before rotation became the default (records, state files) spells
  // rot=0 and reads back unrotated.
  CHECK_FALSE(kv::parse_setting("k=q4,v=q4,g=32,axis=token,r=0,rot=0").rotate);
  // Read in pieces, as the CLI's single-field flags and a settings file's keys are.
  kv::SettingReader r;
  r.field("k", "q8");
  CHECK_FALSE(r.rotation_given());
  CHECK(r.finish().rotate);
  r.field("rotate", "false");
  CHECK(r.rotation_given());
  CHECK_FALSE(r.finish().rotate);
}

TEST_CASE("bad settings are usage errors that name the field") {
  CHECK(error_of("").find("empty") != std::string::npos);
  CHECK(error_of("q5").find("q5") != std::string::npos);
  CHECK(error_of("k=q8,colour=blue").find("colour") != std::string::npos);
  CHECK(error_of("k=q8,g=-4").find("g=-4") != std::string::npos);
  CHECK(error_of("k=q8,r=lots").find("r=lots") != std::string::npos);
  CHECK(error_of("k=q8,rot=2").find("rot=2") != std::string::npos);
  CHECK(error_of("axis=diagonal").find("diagonal") != std::string::npos);
  CHECK(error_of("k=q4,q8").find("first") != std::string::npos);
  CHECK(error_of("k=q8,").find("empty") ==
        std::string::npos);  // an empty field is not "an empty setting"
  CHECK_FALSE(error_of("k=q8,").empty());
  CHECK(error_of("q8,sinks=-1").find("sinks=-1") != std::string::npos);
}

TEST_CASE("per-layer formats and sinks: the canonical name groups them and reads back") {
  const KvConfig c = kv::parse_setting("k=q4,v=q4,layers[0,1,-2,-1]=q8");
  REQUIRE(c.layers.size() == 8);  // one entry per layer and side
  CHECK(c.name() == "k=q4,v=q4,g=0,axis=token,r=0,rot=1,layers[-2,-1,0,1]=q8");
  CHECK(same(kv::parse_setting(c.name()), c));
  // Resolved for a 6-layer model: indices from the last become absolute; the name reads back.
  const KvConfig r = kv::resolve_layers(c, 6);
  CHECK(r.name() == "k=q4,v=q4,g=0,axis=token,r=0,rot=1,layers[0,1,4,5]=q8");
  CHECK(kv::resolve_layers(kv::parse_setting(r.name()), 6).name() == r.name());
  CHECK(r.format(kv::TileRole::kKey, 4) == Format::kQ8);
  CHECK(r.format(kv::TileRole::kValue, 2) == Format::kQ4);
  // Sides apart, sinks, a later per-layer field winning, and a per-layer field before k= still
  // overriding it (per-layer fields override k and v wherever they stand).
  const KvConfig m =
      kv::parse_setting("layers[2]=q8,k=q8,v=q8,sinks=4,k[0]=f32,v[-1]=q4,layers[3]=q2,k[3]=q8");
  CHECK(m.sinks == 4);
  // layers[2]=q8 and k[3]=q8 are the setting's own format; k[3] replaced layers[3]'s key.
  CHECK(m.name() == "k=q8,v=q8,g=0,axis=token,r=0,rot=1,sinks=4,k[0]=f32,v[-1]=q4,v[3]=q2");
  CHECK(same(kv::parse_setting(m.name()), m));
  const KvConfig first = kv::parse_setting("layers[0]=q8,k=q4,v=q4");
  CHECK(kv::resolve_layers(first, 2).format(kv::TileRole::kKey, 0) == Format::kQ8);
  CHECK(kv::resolve_layers(first, 2).format(kv::TileRole::kKey, 1) == Format::kQ4);
  // Two spellings of one layer (0 and -2 of 2 layers): the later wins once resolved.
  CHECK(kv::resolve_layers(kv::parse_setting("q4,layers[0]=q8,layers[-2]=q2"), 2).name() ==
        "k=q4,v=q4,g=0,axis=token,r=0,rot=1,layers[0]=q2");
  // Without protections the name is the one records of earlier versions carry.
  CHECK(kv::parse_setting("q8,rot=0,sinks=0").name() == "k=q8,v=q8,g=0,axis=token,r=0,rot=0");
  CHECK_FALSE(kv::parse_setting("f32,layers[1]=q8").is_f32());
  CHECK(kv::parse_setting("f32,sinks=8,layers[1]=f32").is_f32());
}

TEST_CASE("bad per-layer fields and layers outside the model are usage errors that say why") {
  CHECK(error_of("q4,layers[]=q8").find("indices") != std::string::npos);
  CHECK(error_of("q4,layers[0,x]=q8").find("'x' is not a layer index") != std::string::npos);
  CHECK(error_of("q4,layers[0,]=q8").find("'' is not a layer index") != std::string::npos);
  CHECK(error_of("q4,layers[0=q8").find("KEY[i,j,...]=FORMAT") != std::string::npos);
  CHECK(error_of("q4,layers[0]x=q8").find("nothing may follow") != std::string::npos);
  CHECK(error_of("q4,g[0]=8").find("only k, v and layers") != std::string::npos);
  CHECK(error_of("q4,layers[0]=q9").find("q9") != std::string::npos);
  CHECK(error_of("q4,layers[0,1]").find("=FORMAT") != std::string::npos);
  for (const char* text : {"q4,layers[6]=q8", "q4,k[-7]=q8"}) {
    CAPTURE(text);
    try {
      kv::resolve_layers(kv::parse_setting(text), 6);
      FAIL("a layer outside the model was accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kUsage);
      CHECK(std::string(e.what()).find("outside the model's 6 layers (0..5, or -6..-1") !=
            std::string::npos);
    }
  }
  CHECK_NOTHROW(kv::resolve_layers(kv::parse_setting("q4,layers[5,-6]=q8"), 6));
}

TEST_CASE("setting lists: ';' between settings, and the older comma form of kvrt bench") {
  const auto list = kv::parse_setting_list("f32;q8;k=q4,v=q4,axis=channel,r=32");
  REQUIRE(list.size() == 3);
  CHECK(list[2].text == "k=q4,v=q4,axis=channel,r=32");
  CHECK(list[2].config.residual == 32);
  const auto old = kv::parse_setting_list("f32,q8,q4,k=q8:v=q4");
  REQUIRE(old.size() == 4);
  CHECK(old[3].config.k_format == Format::kQ8);
  CHECK(old[3].config.v_format == Format::kQ4);
  CHECK(kv::parse_setting_list("k=q8,v=q4").size() == 1);  // one setting, not two
  CHECK_THROWS_AS(kv::parse_setting_list(""), Error);
  CHECK_THROWS_AS(kv::parse_setting_list("q8;;q4"), Error);
}

TEST_CASE("TOML settings, the C API and the CLI read the same fields as the text form") {
  test::TempDir tmp;
  const std::string path = tmp / "settings.toml";
  std::ofstream(path) << "[[setting]]\nlabel = \"a\"\nkv = \"q4,axis=channel,r=32\"\n\n"
                         "[[setting]]\nlabel = \"b\"\nk = \"q4\"\nv = \"q4\"\nk_axis = "
                         "\"channel\"\nresidual = 32\n\n"
                         "[[setting]]\nlabel = \"c\"\nkv = \"q8\"\ngroup = 16\nrotate = true\n";
  const auto s = validate::read_settings(path);
  REQUIRE(s.size() == 3);
  CHECK(same(s[0].kv, s[1].kv));
  CHECK(same(s[2].kv, kv::parse_setting("q8,g=16,rot=1")));
  std::ofstream(path) << "[[setting]]\nlabel = \"bad\"\nkv = \"q8,colour=blue\"\n";
  try {
    validate::read_settings(path);
    FAIL("a bad kv field was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(path + ":3") !=
          std::string::npos);  // file and line of the key
    CHECK(std::string(e.what()).find("colour") != std::string::npos);
  }
  kvrt_kv_config c;
  REQUIRE(kvrt_kv_config_parse("q4,axis=channel,r=32", &c) == KVRT_OK);
  CHECK(c.k_format == KVRT_KV_Q4);
  CHECK(c.k_axis == KVRT_KEY_AXIS_CHANNEL);
  CHECK(c.residual == 32);
  CHECK(c.sinks == 0);
  CHECK(c.n_layer_formats == 0);
  CHECK(kvrt_kv_config_parse("", &c) == KVRT_ERR_INVALID_ARGUMENT);
  // Sinks and per-layer formats: TOML (kv and the sinks key) and the C API hold what the text says.
  std::ofstream(path)
      << "[[setting]]\nlabel = \"p\"\nkv = \"q4,layers[0,-1]=q8,v[1]=f32\"\nsinks = 4\n";
  const auto p = validate::read_settings(path);
  REQUIRE(p.size() == 1);
  const KvConfig protected_q4 = kv::parse_setting("q4,sinks=4,layers[0,-1]=q8,v[1]=f32");
  CHECK(same(p[0].kv, protected_q4));
  CHECK(validate::setting_label(p[0].kv, ops::MatmulPrecision::kF32) ==
        "q4/q4 sinks4 v[1]=f32,layers[-1,0]=q8");
  REQUIRE(kvrt_kv_config_parse("q4,sinks=4,layers[0,-1]=q8,v[1]=f32", &c) == KVRT_OK);
  CHECK(c.sinks == 4);
  REQUIRE(c.n_layer_formats == 5);
  CHECK(c.layer_formats[0].layer == 0);
  CHECK(c.layer_formats[0].side == KVRT_KV_KEYS);
  CHECK(c.layer_formats[0].format == KVRT_KV_Q8);
  CHECK(c.layer_formats[4].layer == 1);
  CHECK(c.layer_formats[4].side == KVRT_KV_VALUES);
  CHECK(c.layer_formats[4].format == KVRT_KV_F32);
  CHECK(kvrt_kv_config_parse("q4,layers[0,x]=q8", &c) == KVRT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(kvrt_last_error()).find("'x'") != std::string::npos);
}

TEST_CASE(
    "kvrt bench accepts every setting of validation/settings.toml, as their canonical names") {
  const auto settings = validate::read_settings(test::source_dir() + "/validation/settings.toml");
  std::string list;
  for (const auto& s : settings) {
    CHECK(same(kv::parse_setting(s.kv.name()), s.kv));
    list += (list.empty() ? "" : ";") + s.kv.name();
  }
  test::TempDir tmp;
  const auto r = test::run_kvrt(
      "bench -m " + test::stories_path() +
          " -t 1 --ctx 160 --prefill-tokens 160 --decode-tokens 2 --settings '" + list + "'",
      tmp);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  for (const auto& s : settings) CHECK(r.out.find(s.kv.name()) != std::string::npos);
}
