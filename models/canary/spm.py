"""The SentencePiece tokenizer of a llama GGUF, in Python, identical to kvrt's (and llama.cpp's).

kvrt's SPM tokenizer turns spaces into U+2581, puts one more U+2581 in front of the text, then
merges adjacent pieces by vocabulary score (highest first, leftmost on ties); pieces that are not
tokens become byte tokens <0xHH>. When no vocabulary token holds U+2581 after its first character
(true for stories260K; checked at load), no merge crosses the start of a word, so each word can be
tokenized alone and cached: that makes tokenizing tens of millions of tokens in Python fast.
tokenizer_check.sh compares this tokenizer with kvrt's on generated text.
"""
import heapq
import struct

SPACE = "\u2581"

_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class _Reader:
    def __init__(self, data):
        self.data, self.off = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.data, self.off)
        self.off += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = self.data[self.off:self.off + n].decode("utf-8")
        self.off += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("I"), self.take("Q")
            return [self.value(et) for _ in range(n)]
        return self.take(_SCALAR[t])


def read_gguf_metadata(path):
    """The metadata key/value pairs of a GGUF v2/v3 file (tensor infos are not read)."""
    with open(path, "rb") as f:
        data = f.read()
    r = _Reader(data)
    if r.take("I") != 0x46554747:
        raise ValueError(f"{path}: not a GGUF file")
    version = r.take("I")
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version} is not 2 or 3")
    r.take("Q")  # tensor count
    n_kv = r.take("Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("I"))
    return meta


class SpmTokenizer:
    def __init__(self, gguf_path):
        meta = read_gguf_metadata(gguf_path)
        if meta.get("tokenizer.ggml.model") != "llama":
            raise ValueError(f"{gguf_path}: not a SentencePiece ('llama') vocabulary")
        self.tokens = meta["tokenizer.ggml.tokens"]
        self.scores = meta["tokenizer.ggml.scores"]
        self.bos_id = meta["tokenizer.ggml.bos_token_id"]
        self.eos_id = meta["tokenizer.ggml.eos_token_id"]
        self.n_vocab = len(self.tokens)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        for t in self.tokens:
            if SPACE in t[1:]:
                raise ValueError(f"token {t!r} holds a space after its start: words are not independent")
        self.byte_ids = [self.ids.get(f"<0x{b:02X}>", -1) for b in range(256)]
        self._cache = {}

    def _merge(self, word):
        """Token ids of one piece (a word with its leading U+2581)."""
        syms = list(word)
        alive = [True] * len(syms)
        nxt = list(range(1, len(syms))) + [-1]
        prv = list(range(-1, len(syms) - 1))
        heap = []

        def push(left, right):
            if left < 0 or right < 0:
                return
            merged = syms[left] + syms[right]
            tid = self.ids.get(merged)
            if tid is not None:
                heapq.heappush(heap, (-self.scores[tid], left, right, len(merged)))

        for i in range(1, len(syms)):
            push(i - 1, i)
        while heap:
            _, left, right, size = heapq.heappop(heap)
            if not alive[left] or not alive[right] or len(syms[left]) + len(syms[right]) != size:
                continue
            syms[left] += syms[right]
            alive[right] = False
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prv[nxt[right]] = left
            push(prv[left], left)
            push(left, nxt[left])
        out = []
        for i, s in enumerate(syms):
            if not alive[i]:
                continue
            tid = self.ids.get(s)
            if tid is not None:
                out.append(tid)
                continue
            for b in s.encode("utf-8"):
                if self.byte_ids[b] < 0:
                    raise ValueError(f"no byte token for byte {b} of {s!r}")
                out.append(self.byte_ids[b])
        return out

    def _word(self, word):
        ids = self._cache.get(word)
        if ids is None:
            ids = self._merge(word)
            if len(self._cache) < 1_000_000:
                self._cache[word] = ids
        return ids

    def encode(self, text, bos=False):
        """Token ids of `text` as kvrt tokenizes it (dummy space prefix, no special tokens)."""
        s = SPACE + text.replace(" ", SPACE)
        out = [self.bos_id] if bos else []
        start = 0
        for i in range(1, len(s) + 1):
            if i == len(s) or s[i] == SPACE:
                out.extend(self._word(s[start:i]))
                start = i
        return out

    def decode(self, ids):
        """Text of token ids (the dummy space prefix of the first piece dropped)."""
        raw = bytearray()
        for i in ids:
            t = self.tokens[i]
            if t.startswith("<0x") and len(t) == 6:
                raw.append(int(t[3:5], 16))
            elif t in ("<s>", "</s>", "<unk>"):
                continue
            else:
                raw += t.replace(SPACE, " ").encode("utf-8")
        text = raw.decode("utf-8", errors="replace")
        return text[1:] if text.startswith(" ") else text
