"""The prompt of tools/peer's measures: the first texts of validation/canary, about 8,000
characters (some 2,000 tokens on the synthetic shape's vocabulary), written to OUT.
    python3 tools/peer/canary_prompt.py MANIFEST OUT"""
import sys
import tomllib

cases = tomllib.load(open(sys.argv[1], "rb"))["case"]
text = ""
for c in cases:
    if len(text) >= 8000:
        break
    text += c["text"].strip() + "\n"
open(sys.argv[2], "w", encoding="utf-8").write(text)
