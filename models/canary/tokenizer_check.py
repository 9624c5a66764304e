#!/usr/bin/python3
"""Checks that spm.py tokenizes like kvrt: both tokenize the text field of every record
(the last field of held-out cases: prompt + answer) and must give the same ids.

  tokenizer_check.py --vocab stories260K.gguf --eval-tool build/models/canary/canary_eval FILE...
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import records  # noqa: E402
import spm  # noqa: E402


def texts_of(path, limit):
    out = []
    for r in records.read_records(path)[:limit]:
        out.append(r[2] + r[3] if len(r) >= 4 else r[1])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--eval-tool", required=True)
    ap.add_argument("--limit", type=int, default=2000, help="records per file")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    tok = spm.SpmTokenizer(a.vocab)
    texts = [t for f in a.files for t in texts_of(f, a.limit)]
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
        path = f.name
    records.write_records(path, [(i, t) for i, t in enumerate(texts)])
    out = subprocess.run([a.eval_tool, "tokens", "-m", a.vocab, "-i", path],
                         check=True, capture_output=True, text=True).stdout
    os.unlink(path)
    kvrt_ids = [[int(x) for x in r[1].split()] for r in (line.split("\t") for line in out.splitlines())]
    bad = [i for i, t in enumerate(texts) if tok.encode(t) != kvrt_ids[i]]
    n_tokens = sum(len(x) for x in kvrt_ids)
    if bad:
        sys.exit(f"tokenizer_check: {len(bad)} of {len(texts)} texts differ from kvrt, first: {texts[bad[0]][:200]!r}")
    print(f"tokenizer_check: {len(texts)} texts, {n_tokens} tokens: spm.py and kvrt agree")


if __name__ == "__main__":
    main()
