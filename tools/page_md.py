"""What the results pages share (tools/results.sh, serve_page.py, peer/peer_page.py): Markdown
tables and writing the page. Standard library only."""
import os
import sys


def table(head, rows):
    """A Markdown table: a header row, then one row per sequence of cells ('|' escaped)."""
    cell = lambda c: str(c).replace("|", "\\|")
    lines = ["| " + " | ".join(cell(c) for c in head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_page(text, page, who):
    """Writes text to page (its directory made if missing) and says so on stderr as `who`."""
    os.makedirs(os.path.dirname(os.path.abspath(page)), exist_ok=True)
    with open(page, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{who}: wrote {page}", file=sys.stderr)
