// kvrt tune: search per-layer K and V formats for the smallest-memory setting that PASSes the gate
// at the deployment context, and write it into the record under a name `kvrt run --kv NAME` takes.
#include <cstdio>

#include "acceptance_options.h"
#include "command_line.h"
#include "commands.h"
#include "common/error.h"
#include "flag_numbers.h"
#include "kv_options.h"
#include "model_options.h"
#include "validate/named_setting.h"
#include "validate/output_file.h"
#include "validate/tune.h"

namespace kvrt::cli {
namespace {

struct TuneOptions {
  ModelOptions model;
  KvOptions kv;
  AcceptanceOptions set;
  std::string formats = "q2,q4,q8,f32", name = "tuned";
  float calibration = 0.25f;
  int sinks = 4;
  int damage_layer = -1;
  float damage_noise = 0;
};

}  // namespace

int cmd_tune(int argc, char** argv) {
  TuneOptions o;
  CommandLine cl(
      "kvrt tune [-m MODEL] -c N [options]",
      "Searches per-layer K and V formats for the smallest-memory KV setting that PASSes the gate "
      "at a\n"
      "context of N positions. It starts with every layer at the most aggressive format, ranks "
      "layers\n"
      "(K and V apart) by their KL on a calibration slice of the acceptance set, falls back the "
      "worst\n"
      "one format at a time (or adds FP32 sinks when they remove more KL per byte), and checks "
      "the\n"
      "steps with validate's statistics on the other cases only.\n"
      "The setting found is written into the record with its verdict under a name (--name, "
      "default\n"
      "tuned): `kvrt run --kv tuned` uses it. Exit 0: found; 1: no setting below FP32 passed;\n"
      "2: usage or input error.");
  o.model.add_to(cl, false);
  o.kv.add_to(cl);
  cl.add("--formats", "LIST",
         "formats to choose from per layer and side, most aggressive first (default q2,q4,q8,f32)",
         &o.formats);
  cl.add("--name", "NAME", "the name the record gives the setting found (default tuned)", &o.name);
  cl.add("--sinks", "N",
         "FP32 positions (attention sinks) one step of the search may add to every layer "
         "(default 4; 0: none; a --kv base with sinks= keeps its own)",
         &o.sinks, 0, 1 << 20);
  cl.add("--calibration", "SHARE",
         "share of each category's cases the search measures on (default 0.25); "
         "the rest decide the verdicts",
         &o.calibration, 0.01f, 0.99f);
  o.set.add_to(cl);
  cl.add("-c,--max-len,--ctx", "N",
         "the deployment context: cases stretch to it and the record binds it "
         "(default: as validate's)",
         &o.set.max_len, 16, 1 << 20);
  cl.add("--budget", "MINUTES",
         "stop the search after this many minutes, keeping the smallest PASS found so far",
         &o.set.budget_minutes, 0.001f, 1e6f);
  cl.add("--seed", "S", "bootstrap and case-split seed (default: the thresholds file's)",
         &o.set.seed);
  cl.add("--record", "PATH",
         "validation record to write (default: in $KVRT_STATE_DIR or ~/.local/state/kvrt)",
         &o.set.record);
  // Tests only: damages the stored scales of layer L in every candidate by the relative NOISE, so
  // the search has a known answer; the record is not written.
  cl.add_hidden("--debug-damage-layer", [&o](std::string_view v) {
    const size_t colon = v.find(':');
    if (colon == std::string_view::npos)
      throw Error("--debug-damage-layer needs LAYER:NOISE", ErrorKind::kUsage);
    o.damage_layer = int(parse_flag_int("--debug-damage-layer", v.substr(0, colon), 0, 1 << 20));
    o.damage_noise = parse_flag_float("--debug-damage-layer", v.substr(colon + 1), 1e-6f, 1e6f);
  });
  if (!cl.parse(argc, argv)) return kExitOk;

  validate::TuneRequest req;
  req.ladder = validate::parse_ladder(o.formats);
  req.base = o.kv.config();
  req.choose_rotation = !o.kv.reader().rotation_given();
  req.matmul = o.kv.matmul_precision();
  req.sinks = o.sinks;
  req.calibration_share = o.calibration;
  req.name = o.name;
  req.damage_layer = o.damage_layer;
  req.damage_noise = o.damage_noise;
  validate::check_setting_name(req.name);
  req.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  o.set.apply(o.model, req.validation);
  const std::unique_ptr<model::Model> model = o.model.load();
  validate::Validation inputs;
  std::vector<std::string> skipped;
  validate::load_tune_inputs(*model, req, inputs, skipped);
  for (const std::string& note : inputs.report.notes)
    std::fprintf(stderr, "kvrt tune: note: %s\n", note.c_str());
  const std::string record_path = validate::prepare_record(inputs, o.set.record);

  validate::Tuning t = validate::tune(*model, req, inputs);
  t.skipped_formats = skipped;
  std::fputs(validate::tune_report_text(t, req).c_str(), stdout);
  if (t.found < 0) return kExitRefused;
  if (req.damage_noise > 0) {
    std::printf("record: not written (--debug-damage-layer)\n");
    return kExitOk;
  }
  for (const std::string& note : validate::save_record(record_path, t.record))
    std::fprintf(stderr, "kvrt tune: note: %s\n", note.c_str());
  std::printf("record: %s (kvrt run --kv %s)\n", record_path.c_str(), req.name.c_str());
  return kExitOk;
}

}  // namespace kvrt::cli
