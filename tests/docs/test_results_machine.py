"""results/ names the machine of every figure (results/README.md, issue #58).

    test_results_machine.py RESULTS_DIR

Fails when an entry of RESULTS_DIR is missing from its README.md index, or when an entry
dated 2026-12-07 or later (the date in its name) has no line starting with ``Machine:``
(``scripts/machine-line`` prints one) in its README.md (a folder) or in itself (a file).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

RULE_FROM = "2026-12-07"
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def problems(results: Path) -> list[str]:
    index = (results / "README.md").read_text(encoding="utf-8")
    out = []
    for entry in sorted(results.iterdir()):
        if entry.name == "README.md":
            continue
        name = entry.name + ("/" if entry.is_dir() else "")
        if f"`{name}`" not in index:
            out.append(f"{name}: not in results/README.md's table")
        date = DATE.search(entry.name)
        if not date or date.group() < RULE_FROM:
            continue
        text_file = entry / "README.md" if entry.is_dir() else entry
        text = text_file.read_text(encoding="utf-8") if text_file.is_file() else ""
        if not any(line.startswith("Machine:") for line in text.splitlines()):
            out.append(f"{name}: no 'Machine:' line in {text_file.name}\n"
                       f"HINT: run scripts/machine-line on the machine that measured and "
                       "paste its line")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.exit(__doc__)
    found = problems(Path(argv[0]))
    for p in found:
        print(p, file=sys.stderr)
    print(f"{0 if found else 1} passed, {1 if found else 0} failed")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
