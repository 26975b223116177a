"""Checks of the built documentation site (make docs runs it after mkdocs build).

A reader of the site was not here: the site must not cite internal issue numbers, must not link
to files outside it (the papers are cited by title and arXiv id), and docstring lists must render
as lists, never as a paragraph that starts with a literal bullet marker.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

SITE = Path(sys.argv[1] if len(sys.argv) > 1 else ".cache/site")
ISSUE_REF = re.compile(r"issues? #\d+|\(#\d+\)", re.IGNORECASE)
OUTSIDE = re.compile(r"""(?:href|src)=["'](?:\.\./)*\.\./shared/|\.\./shared/""" + "papers")
PARAGRAPH = re.compile(r"<p>(.*?)</p>", re.DOTALL)
TAG = re.compile(r"<[^>]+>")


def problems(site: Path) -> list[str]:
    """Every problem of the built site, as ``page: what``."""
    found: list[str] = []
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site)
        if rel.parts[0] == "changelog":  # the changelog is history: it may name issues
            continue
        text = page.read_text(encoding="utf-8", errors="replace")
        if OUTSIDE.search(text):
            found.append(f"{rel}: links to a file outside the site (../shared)")
        for para in PARAGRAPH.findall(text):
            plain = html.unescape(TAG.sub("", para)).strip()
            if re.match(r"[*+-] \S", plain) or re.search(r"\n[*+] \S", plain):
                found.append(f"{rel}: a paragraph with a literal bullet marker: {plain[:80]!r}")
            if ISSUE_REF.search(plain):
                found.append(f"{rel}: an internal issue number: {ISSUE_REF.search(plain).group(0)!r}")
    return found


def main() -> int:
    """Print the site's problems; exit 1 when there is any."""
    if not SITE.is_dir():
        print(f"check_site: no built site at {SITE}", file=sys.stderr)
        return 2
    found = problems(SITE)
    for line in found:
        print(f"check_site: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
