#!/usr/bin/env bash
# The house format (.clang-format) over every C and C++ file git tracks. With --check it changes
# nothing and fails, listing the files that differ; without it, it formats them in place. The
# format is clang-format 14's (Debian 12), installed here when missing: other versions format some
# lines differently, so the check refuses them rather than report a false difference.
#   tools/format.sh [--check]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "format.sh: unknown option '$1' (usage: tools/format.sh [--check])" >&2; exit 2 ;;
esac

. "$root/tools/apt_need.sh"
apt_need clang-format-14

cd "$root"
mapfile -t files < <(git ls-files '*.c' '*.cc' '*.h')
if ((check == 0)); then
  clang-format-14 -i "${files[@]}"
  exit 0
fi
# One run over all files; each difference is reported as "FILE:LINE:COL: error: ...".
status=0
out="$(clang-format-14 --dry-run -Werror "${files[@]}" 2>&1)" || status=$?
mapfile -t bad < <(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' <<<"$out" | sort -u)
if ((status != 0 && ${#bad[@]} == 0)); then
  echo "$out" >&2
  echo "format.sh: clang-format-14 failed (exit $status)" >&2
  exit 1
fi
if ((${#bad[@]})); then
  echo "format.sh: ${#bad[@]} file(s) differ from .clang-format (tools/format.sh formats them):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files match .clang-format"
