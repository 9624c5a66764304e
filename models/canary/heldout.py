#!/usr/bin/python3
"""The held-out retrieval set of the canary model: facts early, cues late, at chosen distances.

Each case is BOS, then held-out story text (stories the training pool does not hold) with two
facts in it: the target and a distractor about another name and relation. The prompt ends with
the target's cue; the answer is " " + value. Names, relations, fact templates and cue templates
all come from the HELDOUT half of tasks.py, which training never uses. The distance is the
number of tokens from the fact's value to the answer's first token, drawn uniformly inside each
bucket (--buckets; 8-128, 128-256, 256-512, 512-900 by default); prompts are at most --max-prompt
tokens (BOS included), so a case fits a 1024 context (4096 with --max-prompt 4090).

Writes OUT.tsv (records: id, distance, prompt, answer; read by canary_eval recall and by
train.py's evaluation) and, with --manifest DIR, an acceptance set for `kvrt validate --cases
DIR` (recall cases, category recall-<bucket>). The same --seed always gives the same set.

  heldout.py --stories STORIES.tsv --train-stories TRAIN.tsv --per-bucket 100 --seed 7 -o OUT.tsv
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
import records  # noqa: E402
import spm  # noqa: E402
import tasks  # noqa: E402

BUCKETS = [(8, 128), (128, 256), (256, 512), (512, 900)]
# The long canary's cases (prepare.sh: val_long.tsv, heldout_long.tsv; --max-prompt 4090).
LONG_BUCKETS = [(2048, 2560), (2560, 3072), (3072, 3584), (3584, 4000)]


def bucket_of(case_id):
    """The distance bucket "lo-hi" of a case id "d<lo>-<hi>-<n>"."""
    lo, hi = case_id[1:].split("-")[:2]
    return f"{lo}-{hi}"


def bucket_order(key):
    return int(key.split("-")[0])


def parse_buckets(text):
    """"lo-hi,lo-hi,..." -> [(lo, hi), ...]"""
    return [tuple(int(x) for x in b.split("-")) for b in text.split(",")]
DEFAULT_VOCAB = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "../../models/stories260K.gguf")


def value_offset(tok, fact, answer):
    """Tokens of the fact before its value (the value follows a space, so it starts a word)."""
    i = fact.index(answer)  # answer = " " + value
    return len(tok.encode(fact[:i]))


class CaseMaker:
    def __init__(self, tok, sentences, max_prompt):
        self.tok, self.sentences, self.max_prompt = tok, sentences, max_prompt
        self.pools = tasks.Pools(heldout=True)

    def filler(self, rng, n_tokens):
        """Consecutive held-out sentences totalling about n_tokens tokens: [(text, n_tokens)]."""
        out, total = [], 0
        i = rng.randrange(len(self.sentences))
        while total < n_tokens:
            s = self.sentences[i % len(self.sentences)]
            out.append(s)
            total += s[1]
            i += 1
        return out

    def make(self, rng, distance):
        """(prompt, answer, measured distance): target fact, filler, cue; a distractor inside."""
        name, other_name = rng.sample(self.pools.names, 2)
        target = tasks.make_fact(rng, self.pools, name)
        other = tasks.make_fact(rng, self.pools, other_name, used_values={target[2]})
        budget = self.max_prompt - distance - 40
        pre = self.filler(rng, rng.randint(0, max(0, budget)))
        mid = self.filler(rng, distance - len(self.tok.encode(target[1])) - 8)
        pieces = [s for s, _ in pre] + [target[0]] + [s for s, _ in mid]
        pieces.insert(rng.randint(0, len(pieces)), other[0])
        pieces.append(target[1])
        prompt = " ".join(pieces)
        return prompt, target[2], self.measure(prompt, target)

    def measure(self, prompt, target):
        before = prompt[:prompt.index(target[0])].rstrip()
        n_before = len(self.tok.encode(before, bos=True)) if before else 1
        value_pos = n_before + value_offset(self.tok, target[0], target[2])
        return len(self.tok.encode(prompt, bos=True)) - value_pos


def build(tok, sentences, per_bucket, seed, max_prompt, buckets=BUCKETS):
    maker = CaseMaker(tok, sentences, max_prompt)
    cases = []
    for lo, hi in buckets:
        rng = tasks.make_rng("heldout", seed, lo)
        n = 0
        while n < per_bucket:
            prompt, answer, dist = maker.make(rng, rng.randint(lo, hi - 1))
            n_prompt = len(tok.encode(prompt, bos=True))
            if not lo <= dist < hi or n_prompt > max_prompt:
                continue  # the filler overshot the bucket: draw again
            cases.append((f"d{lo}-{hi}-{n:03d}", dist, prompt, answer))
            n += 1
    return cases


def held_out_sentences(tok, path):
    texts = [r[1] for r in records.read_records(path) if r[1].strip()]
    return [(s, len(tok.encode(s))) for t in texts for s in data.split_sentences(t)]


def check_names_unseen(train_path):
    """No held-out name may occur in the training story pool."""
    with open(train_path, encoding="utf-8") as f:
        text = f.read()
    seen = [n for n in tasks.HELDOUT_NAMES if n in text]
    if seen:
        sys.exit(f"heldout.py: held-out names occur in the training stories: {seen}")


def toml_string(s):
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{out}"'


def write_manifest(directory, cases, tok, buckets=BUCKETS):
    os.makedirs(directory, exist_ok=True)
    # The header names this script's first home, tools/canary/: the manifest's bytes are part of the
    # acceptance set's sha256, which records of validation/canary carry.
    lines = ["# Held-out retrieval cases of the canary model, written by tools/canary/heldout.py",
             "# (validation/canary/ in the repository is prepare.sh's heldout_cases: seed 7, 100 cases per",
             "# distance bucket). Names, relations and fact and cue templates are the held-out halves that",
             "# training never used. Use: kvrt validate -m models/canary.gguf --cases validation/canary",
             "# category recall-<lo>-<hi>: the distance in tokens from the fact's value to the answer.", ""]
    if buckets != BUCKETS:
        lines = ["# Held-out retrieval cases of the canary models, written by models/canary/heldout.py with",
                 f"# distance buckets {', '.join(f'{lo}-{hi}' for lo, hi in buckets)}. Names, relations and fact",
                 "# and cue templates are the held-out halves that training never used.",
                 "# category recall-<lo>-<hi>: the distance in tokens from the fact's value to the answer.", ""]
    for cid, dist, prompt, answer in cases:
        lo_hi = cid.split("-")[0][1:] + "-" + cid.split("-")[1]
        lines += ["[[case]]", f'id = "canary-{cid}"', f'category = "recall-{lo_hi}"',
                  'mode = "recall"', f"text = {toml_string(prompt)}", f"answer = {toml_string(answer)}",
                  f"generate = {len(tok.encode(answer[1:])) + 2}", ""]
    with open(os.path.join(directory, "manifest.toml"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stories", required=True, help="held-out story records (canary_eval stories)")
    ap.add_argument("--train-stories", required=True, help="training story records (checked for names)")
    ap.add_argument("--vocab", default=DEFAULT_VOCAB, help="GGUF with the tokenizer (stories260K)")
    ap.add_argument("--per-bucket", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-prompt", type=int, default=1000)
    ap.add_argument("--buckets", type=parse_buckets, default=BUCKETS,
                    help="distance buckets lo-hi,lo-hi,... (default 8-128,128-256,256-512,512-900)")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--manifest", help="also write DIR/manifest.toml for kvrt validate --cases")
    a = ap.parse_args()
    check_names_unseen(a.train_stories)
    tok = spm.SpmTokenizer(a.vocab)
    cases = build(tok, held_out_sentences(tok, a.stories), a.per_bucket, a.seed, a.max_prompt, a.buckets)
    records.write_records(a.out, cases)
    if a.manifest:
        write_manifest(a.manifest, cases, tok, a.buckets)
    print(f"heldout.py: {len(cases)} cases in {len(a.buckets)} buckets -> {a.out}")


if __name__ == "__main__":
    main()
