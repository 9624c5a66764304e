"""Records of the canary tools: tab-separated fields, one record a line, with backslash, newline,
tab and carriage return escaped (the format of models/canary/records.h)."""

_ESC = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESC = {"\\": "\\", "n": "\n", "t": "\t", "r": "\r"}


def escape(text):
    return "".join(_ESC.get(c, c) for c in text)


def unescape(field):
    out, i = [], 0
    while i < len(field):
        c = field[i]
        if c == "\\":
            out.append(_UNESC[field[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def write_records(path, records):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for r in records:
            f.write("\t".join(escape(str(x)) for x in r) + "\n")


def read_records(path):
    # A generated continuation may hold a lone byte token: such bytes read as U+FFFD.
    with open(path, encoding="utf-8", errors="replace", newline="\n") as f:
        return [[unescape(x) for x in line.rstrip("\n").split("\t")] for line in f if line.strip("\n")]
