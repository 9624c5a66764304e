// kvrt tune end to end on stories260K, the record it writes and `kvrt run --kv tuned` through the
// gate.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

using kvrt::test::run_kvrt;
using kvrt::test::TempDir;

namespace {

std::string model_arg() { return "-m " + kvrt::test::stories_path(); }

// The words after "LABEL (N):" on the line that starts with LABEL.
std::vector<std::string> listed(const std::string& out, const std::string& label) {
  const size_t at = out.find("\n" + label + " (");
  if (at == std::string::npos) return {};
  const size_t colon = out.find("):", at);
  std::istringstream line(out.substr(colon + 2, out.find('\n', colon) - colon - 2));
  std::vector<std::string> words;
  for (std::string w; line >> w;) words.push_back(w);
  return words;
}

// The text after `key` up to the end of its line.
std::string rest_of_line(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return "";
  return text.substr(at + key.size(), text.find('\n', at) - at - key.size());
}

}  // namespace

// 160 positions and three formats keep the search to seconds; the verdicts are validate's.
TEST_CASE(
    "tune finds a PASS below FP32 on disjoint slices, records it by name, and run takes --kv "
    "tuned") {
  TempDir tmp;
  setenv("KVRT_STATE_DIR", (tmp / "state").c_str(), 1);
  const std::string record = tmp / "r.toml";
  const auto t = run_kvrt(
      "tune " + model_arg() + " -c 160 --formats q4,q8,f32 --sinks 1 --record " + record, tmp);
  INFO(t.out, t.err);
  REQUIRE(t.exit_code == 0);

  // The calibration slice and the verdict slice share no case, and both hold some.
  const std::vector<std::string> calib = listed(t.out, "calibration cases"),
                                 verdict = listed(t.out, "verdict cases");
  CHECK(!calib.empty());
  CHECK(verdict.size() > calib.size());
  std::set<std::string> all(calib.begin(), calib.end());
  for (const std::string& id : verdict)
    CHECK_MESSAGE(all.insert(id).second, id << " is in both slices");

  // Every unit (5 layers, K and V) was measured, and the path ends at the FP32 cache.
  for (const char* unit : {"k[0]", "v[0]", "k[4]", "v[4]"})
    CHECK(t.out.find(std::string("\n") + unit + " ") != std::string::npos);
  CHECK(t.out.find("time: ") != std::string::npos);
  // The sinks step is calibrated too: every unit at q4 without and with sinks=1.
  CHECK(t.out.find("every unit at q4: KL ") != std::string::npos);
  CHECK(t.out.find(", with sinks=1 ") != std::string::npos);

  // The record holds the setting found, named, with its PASS at this context and its bytes/token.
  const std::string found = rest_of_line(t.out, "found: tuned = ");
  REQUIRE(!found.empty());
  // The base gives no rot: tune measured the bottom without and with rotation and kept the better.
  const std::string rot = rest_of_line(t.out, "rotation: every unit at q4: KL ");
  REQUIRE(!rot.empty());
  CHECK(found.find(rot.find("runs with (rot=1)") != std::string::npos ? ",rot=1" : ",rot=0") !=
        std::string::npos);
  // One FP32 position costs less than raising a unit, so the first PASS is checked with the sinks
  // toggled (taken out, or added to the step before it). The result is the check's setting when it
  // PASSed, else the path's: it holds the sinks exactly when the check added them and PASSed or
  // took them out and did not.
  const std::string check = rest_of_line(t.out, "sinks check (");
  REQUIRE(!check.empty());
  const bool check_added = check.find("the sinks added to the step before it") != std::string::npos;
  const bool check_passed = check.find("PASS") != std::string::npos;
  CHECK((found.find("sinks=1") != std::string::npos) == (check_added == check_passed));
  const std::string text = kvrt::test::read_file(record);
  const size_t at = text.find("name = \"" + found + "\"");
  REQUIRE(at != std::string::npos);
  const std::string entry = text.substr(at);
  CHECK(entry.find("verdict = \"PASS\"") != std::string::npos);
  CHECK(entry.find("n_ctx = 160") != std::string::npos);
  CHECK(entry.find("tune_name = \"tuned\"") != std::string::npos);
  const double bytes = std::atof(rest_of_line(entry, "bytes_per_token = ").c_str());
  CHECK(bytes > 0);
  CHECK(bytes < 1280);  // the FP32 cache: 5 layers x (K and V) x 4 kv heads x 8 dims x 4 bytes

  // run takes it by name through the gate, at the context it was found for and not beyond.
  const auto r =
      run_kvrt("run " + model_arg() + " -c 160 -p Once -n 4 --kv tuned --record " + record, tmp);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("KV setting 'tuned' is " + found) != std::string::npos);
  CHECK(r.err.find("validated for 160 positions") != std::string::npos);
  const auto longer =
      run_kvrt("run " + model_arg() + " -c 512 -p Once -n 4 --kv tuned --record " + record, tmp);
  CHECK(longer.exit_code == 3);
  CHECK(longer.err.find("validated up to a context of 160") != std::string::npos);
  const auto other =
      run_kvrt("run " + model_arg() + " -c 160 -p Once -n 4 --kv fast --record " + record, tmp);
  CHECK(other.exit_code == 3);
  CHECK(other.err.find("no KV setting named 'fast' (it names tuned)") != std::string::npos);
  const auto mixed =
      run_kvrt("run " + model_arg() + " -p Once -n 4 --kv tuned --kv-k q8 --record " + record, tmp);
  CHECK(mixed.exit_code == 2);
}

TEST_CASE("tune and run --kv NAME refuse bad input before any work") {
  TempDir tmp;
  setenv("KVRT_STATE_DIR", (tmp / "state").c_str(), 1);
  const auto no_record = run_kvrt("run " + model_arg() + " -p Once -n 4 --kv tuned", tmp);
  CHECK(no_record.exit_code == 3);
  CHECK(no_record.err.find("kvrt tune") != std::string::npos);
  CHECK(no_record.err.find("does not exist") != std::string::npos);
  for (const char* bad : {"--formats q8,q4", "--formats q4", "--formats q4,q5,f32", "--name q8",
                          "--name q3", "--name 4bit", "--kv q4", "--kv k=q8", "--kv layers[0]=q8",
                          "--calibration 1.5", "-c 100000", "--sinks -1"}) {
    const auto r = run_kvrt("tune " + model_arg() + " " + bad, tmp);
    INFO(bad, " ", r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("kvrt tune") != std::string::npos);
    CHECK(r.out.empty());
  }
}

// A known answer: layer 2's stored scales damaged in every candidate (the debug harness of the
// negative control), so its keys and values hurt at q4 and at q8 and only FP32 protects them: the
// path raises both of its sides to FP32 before any other unit, and the setting found keeps layer 2,
// and only layer 2, in FP32.
TEST_CASE("tune protects a damaged layer in FP32 and no other") {
  TempDir tmp;
  setenv("KVRT_STATE_DIR", (tmp / "state").c_str(), 1);
  const auto t = run_kvrt(
      "tune " + model_arg() + " -c 160 --formats q4,q8,f32 --kv rot=0 --debug-damage-layer 2:0.5",
      tmp);
  INFO(t.out, t.err);
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("record: not written") != std::string::npos);
  CHECK(t.out.find("rotation: ") == std::string::npos);  // the base gave it: nothing to choose
  const std::string found = rest_of_line(t.out, "found: tuned = ");
  // The damaged layer's keys in FP32 (at q8 they cost it 8x the KL its values do); its values in
  // FP32 too, or at q8 when the sinks step leaves that within the limits (with the task cases in
  // the set, the verdict cases at -c 160 pass k[2]=f32,v[2]=q8 beside sinks=4: KL 0.0057).
  CHECK((found.find("layers[2]=f32") != std::string::npos ||
         found.find("k[2]=f32") != std::string::npos));
  CHECK(found.find("f32") == found.rfind("f32"));

  const size_t path = t.out.find("\nPath ");
  REQUIRE(path != std::string::npos);
  std::istringstream lines(t.out.substr(path));
  std::vector<std::string> to_f32;  // the units raised to FP32, in path order
  for (std::string line; std::getline(lines, line) && line.rfind("found:", 0) != 0;) {
    std::istringstream words(line);
    std::string step, unit, format;
    words >> step >> unit >> format;
    if (format == "f32") to_f32.push_back(unit);
  }
  REQUIRE(to_f32.size() == 10);
  CHECK(std::set<std::string>{to_f32[0], to_f32[1]} == std::set<std::string>{"k[2]", "v[2]"});
}
