#!/usr/bin/env bash
# Writes a results page, docs/results/<date>-<cpu>.md, from the JSON of programs run on this
# machine: `kvrt bench --json` and `bench_attention` on the realistic synthetic shape (through
# tools/bench.sh), `kvrt validate --json` on a model (default: the default model at -c 512) and,
# with --kv-quality, `bench/kv_quality --json` (KL of each KV setting to the FP32 cache).
# The page states the commands, the commit, lscpu's model name and the load average before and
# after the runs; its tables are made from the JSON by the Python below (standard library only),
# never typed.
#
#   tools/results.sh [options] [-- KVRT_BENCH_ARGS...]
#     --validate-model FILE   model for kvrt validate (default: kvrt's default model)
#     --validate-ctx N        context for kvrt validate (default 512)
#     --kv-quality MODEL      also run bench/kv_quality on MODEL (repeatable), on the texts of
#                             validation/canary's cases, 4 chunks of 960 tokens (KVRT_CHUNKS, KVRT_N)
#     --only-kv-quality       run only the --kv-quality models (no kvrt bench, no kvrt validate)
#     --from DIR              do not run anything: render DIR/bench.json, DIR/bench_attention.json and
#                             DIR/validate.json, DIR/kv_quality-*.json (each optional) with the
#                             commands in DIR/commands.txt ("NAME: COMMAND" lines) and the load in
#                             DIR/load.txt ("WHEN: LOAD" lines, optional); the page names this
#                             checkout's commit
#     --out FILE              the page to write (default docs/results/<date>-<cpu>.md)
#     --readme                also rewrite README.md's headline results (between its
#                             "<!-- results.sh: begin -->" and "<!-- results.sh: end -->" lines)
#                             from the same JSON, linking the page
#   Arguments after -- go to kvrt bench (see tools/bench.sh; its defaults take tens of minutes).
#   Env: KVRT_BUILD (default build/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_BUILD:-$root/build}"

validate_model=""
validate_ctx=512
from=""
out=""
readme=""
quality_models=()
only_quality=0
while (($#)); do
  case "$1" in
    --validate-model) validate_model="$2"; shift 2 ;;
    --validate-ctx) validate_ctx="$2"; shift 2 ;;
    --kv-quality) quality_models+=("$2"); shift 2 ;;
    --only-kv-quality) only_quality=1; shift ;;
    --from) from="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --readme) readme="$root/README.md"; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "results.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

cpu="$(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
[ -n "$cpu" ] || cpu="unknown CPU"
commit="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [ "$commit" != unknown ] && [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit (with uncommitted changes)"
fi
slug="$(printf '%s' "$cpu" | tr '[:upper:]' '[:lower:]' | sed -e 's/([^)]*)//g' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/^-//' -e 's/-$//' | cut -c1-48)"
[ -n "$out" ] || out="$root/docs/results/$(date -u +%Y-%m-%d)-$slug.md"

if [ -n "$from" ]; then
  dir="$from"
else
  dir="$(mktemp -d)"
  trap 'rm -rf "$dir"' EXIT
  "$root/tools/setup.sh"
  # Other work on the machine moves the numbers: the page states the load around the runs.
  load() { printf '%s: %s\n' "$1" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$dir/load.txt"; }
  load before
  : >"$dir/commands.txt"
  if ((${#quality_models[@]})); then
    chunks="${KVRT_CHUNKS:-4}" n="${KVRT_N:-960}"
    python3 -c 'import sys, tomllib; print("\n".join(c["text"] for c in tomllib.load(open(sys.argv[1], "rb"))["case"]))' \
      "$root/validation/canary/manifest.toml" >"$dir/canary.txt"
    for m in "${quality_models[@]}"; do
      name="$(basename "$m" .gguf)"
      echo "results.sh: kv_quality -m $m" >&2
      "$build/bench/kv_quality" -m "$m" --text "$dir/canary.txt" --chunks "$chunks" -n "$n" --json "$dir/kv_quality-$name.json"
      printf 'kv_quality %s: build/bench/kv_quality -m %s --text TEXT --chunks %s -n %s --json FILE (TEXT: the texts of validation/canary/manifest.toml, one a line)\n' \
        "$name" "$m" "$chunks" "$n" >>"$dir/commands.txt"
    done
  fi
fi
if [ -z "$from" ] && ((only_quality == 0)); then
  # kvrt bench and bench_attention on the realistic shape: tools/bench.sh writes both JSON files.
  bench_cmd=(tools/bench.sh "$@")
  echo "results.sh: ${bench_cmd[*]}" >&2
  KVRT_BENCH_OUT="$dir" "$root/tools/bench.sh" "$@" | tee "$dir/bench.txt"
  printf 'kvrt bench: tools/bench.sh %s  (kvrt bench -m build/models/synth-1024-f16.gguf -t 2 --json FILE %s)\n' \
    "$*" "$*" >>"$dir/commands.txt"
  printf 'bench_attention: build/bench/bench_attention FILE  (run by tools/bench.sh)\n' >>"$dir/commands.txt"
  # kvrt validate writes its record into the temporary directory, not the user's state directory.
  validate_args=(validate -c "$validate_ctx" --json "$dir/validate.json" --record "$dir/record.toml")
  [ -z "$validate_model" ] || validate_args+=(-m "$validate_model")
  echo "results.sh: kvrt ${validate_args[*]}" >&2
  status=0
  "$build/tools/kvrt/kvrt" "${validate_args[@]}" | tee "$dir/validate.txt" || status=$?
  # Exit 1 means that some setting did not PASS: a result, not a failure of the run.
  ((status <= 1)) || { echo "results.sh: kvrt validate failed (exit $status)" >&2; exit "$status"; }
  printf 'kvrt validate: kvrt validate -c %s%s --json FILE --record TMPFILE\n' "$validate_ctx" \
    "${validate_model:+ -m $validate_model}" >>"$dir/commands.txt"
  load after
fi

mkdir -p "$(dirname "$out")"
PYTHONPATH="$root/tools${PYTHONPATH:+:$PYTHONPATH}" python3 - "$dir" "$out" "$cpu" "$commit" "$readme" <<'PY'
import datetime, json, os, re, sys

from page_md import table, write_page

src, out, cpu, commit, readme = sys.argv[1:6]


def load(name):
    path = os.path.join(src, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def commands(name="commands.txt"):
    path = os.path.join(src, name)
    if not os.path.exists(path):
        return {}
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, cmd = line.rstrip("\n").partition(": ")
            out[key] = cmd
    return out


def g(x, digits=3):
    """A number for a table: None as '-', else `digits` significant digits."""
    if x is None:
        return "-"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e6):
        return str(int(x))
    return f"{x:.{digits}g}"


def rate(x):
    return "-" if x is None else f"{x:.1f}"


def size(n):
    if n is None:
        return "-"
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{int(n)} B"


cmds = commands()
bench, attn, val = load("bench.json"), load("bench_attention.json"), load("validate.json")
md = []
today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
md.append(f"# Results: {cpu}, {today}\n")
md.append("Generated by `tools/results.sh` from the programs' JSON output; do not edit by hand. "
          "Numbers are one run on one machine: compare ratios within this page, and rerun to see "
          "the spread ([how to read them](../performance.md)).\n")
machine = [("CPU (lscpu model name)", cpu), ("commit", commit), ("date (UTC)", today)]
isa = (bench or val or {}).get("isa")
if isa:
    machine.append(("SIMD rung", isa))
if bench:
    machine.append(("matrix products", bench.get("matmul", "-")))
if val:
    machine.append(("kvrt version", val.get("kvrt_version", "-")))
cores = os.cpu_count()
for when, avg in commands("load.txt").items():
    machine.append((f"load average {when} the runs (1, 5, 15 min; {cores} cores)", avg))
md.append(table(["", ""], [(f"**{k}**", f"`{v}`" if k in ("commit", "SIMD rung") else v) for k, v in machine]))

if bench:
    md.append("## End to end: `kvrt bench`\n")
    if "kvrt bench" in cmds:
        md.append(f"Command: `{cmds['kvrt bench']}`\n")
    md.append(f"Model `{os.path.basename(bench['model'])}`, {bench['threads']} threads. Prefill tok/s "
              "over the timed prefill; decode tok/s at each context, with the ratio to the first setting.\n")
    ctxs = sorted({d["ctx"] for r in bench["results"] for d in r["decode"]})
    first = {d["ctx"]: d["tok_s"] for d in bench["results"][0]["decode"]} if bench["results"] else {}
    rows = []
    for r in bench["results"]:
        dec = {d["ctx"]: d["tok_s"] for d in r["decode"]}
        cells = []
        for c in ctxs:
            if c not in dec:
                cells.append("-")
            else:
                ratio = f" ({dec[c] / first[c]:.2f}x)" if first.get(c) else ""
                cells.append(f"{dec[c]:.2f}{ratio}")
        rows.append([f"`{r['setting']}`", g(r["kv_bytes_per_token"]), f"{r['prefill_tok_s']:.1f} ({r['prefill_tokens']} tok)"] + cells)
    md.append(table(["setting", "KV bytes/token", "prefill tok/s"] + [f"decode @{c}" for c in ctxs], rows))

if attn:
    md.append("## Decode attention alone: `bench_attention`\n")
    if "bench_attention" in cmds:
        md.append(f"Command: `{cmds['bench_attention']}`\n")
    s = attn["shape"]
    md.append(f"{s['n_heads']} query heads, {s['n_kv_heads']} KV heads, head_dim {s['head_dim']}, "
              f"{s['n_layers']} layers per pass. `us`: microseconds for one decode token through every layer; "
              "GB/s of packed cache read, and its share of a plain read of as many bytes on as many threads "
              "(`stream`).\n")
    rows = [r for r in attn["rows"] if r["kind"] == "attention"]
    if rows:
        md.append("### The decode path (`ops::attention`)\n")
        md.append(table(["format", "context", "threads", "us", "GB/s", "stream GB/s", "of stream"],
                        [[f"`{r['format']}`", r["ctx"], r["threads"], f"{r['us']:.1f}", f"{r['gb_per_s']:.2f}",
                          f"{r['stream_gb_per_s']:.2f}", f"{100 * r['gb_per_s'] / r['stream_gb_per_s']:.0f}%"]
                         for r in rows]))
    rows = [r for r in attn["rows"] if r["kind"] == "kernel"]
    if rows:
        md.append("### The dot and accumulate kernels per ISA (one thread, GB/s)\n")
        keys = sorted({(r["format"], r["ctx"]) for r in rows}, key=lambda k: (k[1], k[0]))
        isas = list(dict.fromkeys(r["isa"] for r in rows))
        by = {(r["format"], r["ctx"], r["isa"]): r["gb_per_s"] for r in rows}
        md.append(table(["format", "context"] + [f"`{i}`" for i in isas],
                        [[f"`{f}`", c] + [f"{by[(f, c, i)]:.2f}" if (f, c, i) in by else "-" for i in isas]
                         for f, c in keys]))

quality = sorted(f for f in os.listdir(src) if f.startswith("kv_quality-") and f.endswith(".json"))
if quality:
    md.append("## KV cache quality: `bench/kv_quality`\n")
    md.append("Per setting: the mean KL of its next-token distributions to the FP32 cache's (nats), the share "
              "of positions whose top-1 token agrees, and the bits each stored K/V value takes (an FP32 window "
              "or sinks are a fixed cost on top), a token at a time. Rotation is written out (`rot=0`) where "
              "it is off; a quantized setting without it is rotated.\n")
    for f in quality:
        q = load(f)
        name = f[len("kv_quality-"):-len(".json")]
        md.append(f"### `{os.path.basename(q['model'])}`\n")
        if f"kv_quality {name}" in cmds:
            md.append(f"Command: `{cmds[f'kv_quality {name}']}`\n")
        md.append(f"{q['chunks']} chunks of {q['n']} tokens.\n")
        md.append(table(["setting", "bits/value", "mean KL", "top-1 agreement"],
                        [[f"`{r['setting']}`", f"{r['bits_per_value']:.2f}", g(r["mean_kl"]), f"{r['top1']:.4f}"]
                         for r in q["rows"]]))

if val:
    md.append("## Validation: `kvrt validate`\n")
    if "kvrt validate" in cmds:
        md.append(f"Command: `{cmds['kvrt validate']}`\n")
    m = val["model"]
    seq = val["sequential"]
    md.append(f"Model `{os.path.basename(m['path'])}` (sha256 `{m['sha256'][:16]}…`), validated context "
              f"{val['max_len']} ({val['context_source']}), {val['threads']} threads, "
              f"{seq['cases_run']} of {len(val['cases'])} cases run in {val['seconds']:.1f} s"
              f"{', the budget ended the run' if seq['budget_ended'] else ''}. Intervals at each setting's "
              "confidence; tok/s at the validated context.\n")
    base = val["baseline"]
    rows = [["f32 baseline", g(base["bytes_per_token"]), size(base["kv_bytes_at_validated_context"]),
             rate(base["prefill_tok_s"]), rate(base["decode_tok_s"]), "-", "-", "-", "(reference)"]]

    def row(s):
        kl, top1 = s["metrics"]["kl"]["all"], s["metrics"]["top1_mismatch"]["all"]
        greedy = s["metrics"]["greedy_mismatch"]["all"]
        look = f" (look {s['look']}, {s['cases_run']} cases)" if s.get("look") else ""
        return [s["label"], g(s["bytes_per_token"]), size(s["kv_bytes_at_validated_context"]),
                rate(s["prefill_tok_s"]), rate(s["decode_tok_s"]),
                f"{g(kl['mean'])} [{g(kl['lower'])}, {g(kl['upper'])}]", g(top1["mean"]), g(greedy["mean"]),
                s["verdict"] + look]

    noise = row(val["noise_floor"])
    noise[0] = "noise floor"
    rows.append(noise)
    rows += [row(s) for s in val["settings"]]
    md.append(table(["setting", "bytes/token", f"KV @{val['max_len']}", "prefill tok/s", "decode tok/s",
                     "mean KL [interval]", "top-1 mismatch", "greedy mismatch", "verdict"], rows))
    rec = val.get("recommended")
    md.append(f"Recommended (`--prefer {val['prefer']}`): {f'`{rec}`' if rec else 'none'}.\n")
    if val.get("skipped_settings"):
        md.append("Settings skipped: " + "; ".join(val["skipped_settings"]) + ".\n")

write_page("\n".join(md), out, "results.sh")


# README's headline: decode speed and KV bytes per setting from kvrt bench, and validate's
# verdicts, each with the page they come from.
def headline():
    link = os.path.relpath(out, os.path.dirname(readme))
    hl = [f"From [{os.path.basename(out)}]({link}) ({cpu}, commit `{commit}`, {today}).\n"]
    if bench and bench["results"]:
        ctxs = sorted({d["ctx"] for r in bench["results"] for d in r["decode"]})
        longest = ctxs[-1]
        first = {d["ctx"]: d["tok_s"] for d in bench["results"][0]["decode"]}
        rows = []
        for r in bench["results"]:
            dec = {d["ctx"]: d["tok_s"] for d in r["decode"]}
            speed = f"{dec[longest]:.1f} ({dec[longest] / first[longest]:.2f}x)" if longest in dec and first.get(longest) else "-"
            rows.append([f"`{r['setting']}`", g(r["kv_bytes_per_token"]), size(r["kv_bytes_per_token"] * longest), speed])
        hl.append(f"Decode of `{os.path.basename(bench['model'])}` ("
                  f"{bench['threads']} threads) at a context of {longest}:\n")
        hl.append(table(["KV setting", "bytes/token", f"KV @{longest}", "decode tok/s (vs first)"], rows))
    if val:
        passed = [s["label"] for s in val["settings"] if s["verdict"] == "PASS"]
        rec = val.get("recommended")
        hl.append(f"`kvrt validate` on `{os.path.basename(val['model']['path'])}` at "
                  f"{val['max_len']} positions: {len(passed)} of {len(val['settings'])} settings PASS; "
                  f"recommended {f'`{rec}`' if rec else 'none'}.\n")
    return "\n".join(hl)


if readme:
    text = open(readme, encoding="utf-8").read()
    begin, end = "<!-- results.sh: begin -->", "<!-- results.sh: end -->"
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        sys.exit(f"results.sh: {readme} needs one '{begin}' line before one '{end}' line")
    head, rest = text.split(begin)
    tail = rest.split(end)[1]
    tmp = readme + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(head + begin + "\n" + headline() + end + tail)
    os.replace(tmp, readme)
    print(readme)
PY
