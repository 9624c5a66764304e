#!/usr/bin/env bash
# The hostile-input catalogue (docs/hardening.md): runs each probe against a built kvrt, behind a
# time limit and an address-space limit, and prints one line per probe, then "N passed, N failed".
#   tools/probe.sh [KVRT] [MODEL]    (default build/tools/kvrt/kvrt and models/stories260K.gguf)
# A probe passes when kvrt exits with the expected code and says the expected words on stderr.
# Exit status: 0 when every probe passed, 1 otherwise. About 20-40 s on two cores.
# Env: KVRT_PROBE_VMEM_KB, the address-space limit (default 4000000; 0 = none, for a kvrt built
# with AddressSanitizer, whose shadow memory reserves terabytes).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
K="$(realpath "${1:-$root/build/tools/kvrt/kvrt}")"
M="$(realpath "${2:-$root/models/stories260K.gguf}")"
[ -x "$K" ] || { echo "probe.sh: no kvrt binary at $K (build first, or pass its path)" >&2; exit 2; }
[ -f "$M" ] || { echo "probe.sh: no model at $M" >&2; exit 2; }
export K M
T="$(mktemp -d "${TMPDIR:-/tmp}/kvrt-probe-XXXXXX")"
trap 'rm -rf "$T"' EXIT
cd "$T"
export KVRT_STATE_DIR="$T/state" OMP_WAIT_POLICY=passive
passed=0
failed=0

vmem="${KVRT_PROBE_VMEM_KB:-4000000}"
limit=""
((vmem > 0)) && limit="ulimit -v $vmem;"

# probe NAME CODE WORDS COMMAND: runs COMMAND (bash, $K and $M set) in $T with 30 s and the
# address-space limit; CODE is the exit code expected and WORDS a piece of stderr.
probe() {
  local name="$1" want="$2" words="$3" cmd="$4" code
  timeout -k 5 30 bash -c "$limit $cmd" >"$T/out" 2>"$T/err"
  code=$?
  local ok=1
  [ "$code" -eq "$want" ] || ok=0
  grep -qF -- "$words" "$T/err" || ok=0
  if ((ok)); then
    passed=$((passed + 1))
    printf 'PASS  %s\n' "$name"
  else
    failed=$((failed + 1))
    printf 'FAIL  %s (exit %s, expected %s; stderr: %s)\n' "$name" "$code" "$want" "$(head -c 200 "$T/err" | tr '\n' ' ')"
  fi
}

# A record whose content hash is recomputed after an edit, as someone editing it by hand would.
rehash() {  # rehash IN OUT
  grep -v '^content_sha256 = ' "$1" >"$T/rest"
  local h
  h="$(sha256sum "$T/rest" | cut -c1-64)"
  { head -n 2 "$T/rest"; echo "content_sha256 = \"$h\""; tail -n +3 "$T/rest"; } >"$2"
}

deep_key() { awk -v n="$1" 'BEGIN { s = "a"; for (i = 0; i < n; ++i) s = s ".a"; print s " = 1" }'; }
fractions() {  # fractions N LO HI: N values from LO towards HI
  awk -v n="$1" -v lo="$2" -v hi="$3" 'BEGIN { for (i = 0; i < n; ++i) printf "%s%.5f", (i ? ", " : ""), lo + (hi - lo) * i / n; print "" }'
}
template() {  # template ID LENGTHS POSITIONS
  printf '[[template]]\nid = "%s"\ncategory = "recall"\nmode = "recall"\nfact = "The code is {value}."\ncue = "The code is"\nanswer = " {value}"\nvalues = ["41"]\nfiller_file = "filler.txt"\nlengths = [%s]\npositions = [%s]\n' "$1" "$2" "$3"
}

# --- inputs --------------------------------------------------------------------------------------
mkfifo fifo
mkdir -p dir cases/deep cases/expand cases/dup cases/escape
deep_key 50000 >deep.toml
{ echo '[[case]]'; deep_key 50000; } >cases/deep/manifest.toml
for d in expand dup escape; do echo "The sky was blue." >"cases/$d/filler.txt"; done
template t "$(fractions 2000 0.05 1.0)" "$(fractions 2000 0.0 1.0)" >cases/expand/manifest.toml
template t "0.5, 0.501" "0.0" >cases/dup/manifest.toml
printf '[[case]]\nid = "x"\ncategory = "prose"\nmode = "teacher_forced"\ntext_file = "../../../../../../etc/passwd"\n' \
  >cases/escape/manifest.toml
truncate -s 60M big.txt
truncate -s $(((64 << 20) + 1)) huge.txt
echo "Hello" >msg.txt
V="\"\$K\" validate -m \"\$M\" --kv q8 --max-len 64 --record r.toml"
if "$K" validate -m "$M" --kv q8 --max-len 64 --record good.toml >/dev/null 2>&1; then
  sed 's/^n_ctx = .*/n_ctx = 4294967360/' good.toml >wide.edit && rehash wide.edit wide.toml
  { cat good.toml; deep_key 50000; } >deep.edit && rehash deep.edit deep-record.toml
else
  echo "probe.sh: kvrt validate could not write the record the record probes edit" >&2
fi

# --- earlier classes: bad flags, missing model, special files, absurd sizes ----------------------
probe "unknown subcommand" 2 "unknown command 'frobnicate'" '"$K" frobnicate'
probe "unknown flag" 2 "--bogus" '"$K" run -m "$M" --bogus'
probe "flag without its value" 2 "needs a value" '"$K" run -m "$M" -n'
probe "count that is not a number" 2 "invalid value 'abc'" '"$K" run -m "$M" -n abc'
probe "unknown KV format" 2 "q3" '"$K" run -m "$M" --kv q3 -p hi'
probe "missing model" 2 "no-such.gguf" '"$K" run -m no-such.gguf -p hi'
probe "directory as model" 2 "is a directory" '"$K" info -m dir'
probe "FIFO as model" 2 "is a FIFO" '"$K" info -m fifo'
probe "/dev/zero as prompt file" 2 "is a character device" '"$K" run -m "$M" -f /dev/zero'
probe "FIFO as thresholds" 2 "is a FIFO" "$V --config fifo"
probe "FIFO as record (run)" 2 "is a FIFO" '"$K" run -m "$M" -p hi --kv q8 --record fifo'
probe "prompt file over 64 MiB" 2 "limit of 64 MiB" '"$K" run -m "$M" -f huge.txt'
probe "context of 10^11 positions" 2 "invalid value '99999999999' for --ctx" '"$K" run -m "$M" -c 99999999999 -p hi'
probe "257 threads" 2 "between 1 and 256" '"$K" run -m "$M" -t 257 -p hi'
probe "validate beyond the model's context" 2 "context of 2048" '"$K" validate -m "$M" --kv q8 --max-len 1048576'

# --- 1: deeply nested TOML -------------------------------------------------------------------------
probe "50,000-part key in --config" 2 "nests keys, tables or arrays more than 64 levels deep" "$V --config deep.toml"
probe "50,000-part key in --settings" 2 "settings file nests" '"$K" validate -m "$M" --max-len 64 --record r.toml --settings deep.toml'
probe "50,000-part key in a --cases manifest" 2 "case manifest nests" "$V --cases cases/deep"
probe "50,000-part key in tune --config" 2 "thresholds file nests" '"$K" tune -m "$M" -c 64 --config deep.toml'
probe "50,000-part key in a rehashed record" 3 "validation record nests" '"$K" run -m "$M" -p hi --kv q8 -c 64 --record deep-record.toml'
probe "4,000 nested arrays" 2 "levels deep" \
  "awk 'BEGIN { s = \"a = \"; for (i = 0; i < 4000; ++i) s = s \"[\"; for (i = 0; i < 4000; ++i) s = s \"]\"; print s }' >arrays.toml; $V --config arrays.toml"

# --- 2: unbounded chat input -----------------------------------------------------------------------
probe "chat < /dev/zero" 4 "a message on standard input is longer than" '"$K" chat -m "$M" --chat-format chatml -c 128 </dev/zero'

# --- 3: unbounded template expansion ---------------------------------------------------------------
probe "template of 2,000 lengths x 2,000 positions" 2 "make 4000000 cases, more than the 256" "$V --cases cases/expand"

# --- 4: lost output --------------------------------------------------------------------------------
probe "run > /dev/full" 4 "No space left on device" '"$K" run -m "$M" -p Once -n 8 >/dev/full'
probe "info > /dev/full" 4 "No space left on device" '"$K" info -m "$M" >/dev/full'
probe "validate > /dev/full" 4 "No space left on device" "$V >/dev/full"
probe "chat > /dev/full" 4 "No space left on device" '"$K" chat -m "$M" --chat-format chatml -n 4 <msg.txt >/dev/full'
probe "bench > /dev/full" 4 "No space left on device" \
  '"$K" bench -m "$M" --ctx 16 --settings f32 --prefill-tokens 16 --decode-tokens 1 >/dev/full'
probe "--version > /dev/full" 4 "No space left on device" '"$K" --version >/dev/full'
probe "run with stdout closed" 4 "Bad file descriptor" '"$K" run -m "$M" -p Once -n 8 >&-'

# --- 7: numeric flags ------------------------------------------------------------------------------
B='"$K" bench -m "$M" --settings f32 --prefill-tokens 16 --decode-tokens 1'
probe "bench --ctx 2147483648" 2 "invalid value '2147483648' for --ctx" "$B --ctx 2147483648"
probe "bench --ctx 4294967424 (128 mod 2^32)" 2 "invalid value '4294967424' for --ctx" "$B --ctx 4294967424"
probe "bench --ctx 2147483647" 2 "invalid value '2147483647' for --ctx" "$B --ctx 2147483647"
probe "bench --ctx 16777216 plus decode steps" 2 "needs 16777217 positions" "$B --ctx 16777216"
probe "-c ' 64'" 2 "invalid value ' 64' for --ctx" '"$K" run -m "$M" -c " 64" -p hi'
probe "--temp nan" 2 "invalid value 'nan' for --temp" '"$K" run -m "$M" --temp nan -p hi'
probe "--seed +5" 2 "invalid value '+5' for --seed" '"$K" run -m "$M" --seed +5 -p hi'

# --- 10: over-long prompt --------------------------------------------------------------------------
probe "60 MiB prompt with -c 128" 4 "the prompt has 62914560 bytes, more than the context of 128 positions" \
  '"$K" run -m "$M" -c 128 -f big.txt'

# --- 11: HOME unset --------------------------------------------------------------------------------
probe "run --kv q8 without HOME" 2 "no directory for validation records" \
  'env -u HOME -u XDG_STATE_HOME -u KVRT_STATE_DIR "$K" run -m "$M" -p hi --kv q8'
probe "validate without HOME" 2 "no directory for validation records" \
  'env -u HOME -u XDG_STATE_HOME -u KVRT_STATE_DIR "$K" validate -m "$M" --kv q8 --max-len 64'

# --- 12: smaller leniencies ------------------------------------------------------------------------
probe "chat with a directory as stdin" 2 "cannot read the messages on standard input: Is a directory" \
  '"$K" chat -m "$M" --chat-format chatml <dir'
probe "duplicate case ids from a template" 2 "expands to the case id 't-L50-P0'" "$V --cases cases/dup"
probe "text_file = ../../../../etc/passwd" 2 "outside the case directory" "$V --cases cases/escape"
probe "record n_ctx of 2^32 + 64" 3 "'n_ctx' must be between 0 and 2147483647" \
  '"$K" run -m "$M" -p hi --kv q8 -c 64 --record wide.toml'

echo "$passed passed, $failed failed"
((failed == 0))
