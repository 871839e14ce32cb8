"""The command line shared by the CLI test scripts: `script.py BINARY CASE` runs one
test_* function of the script (CTest registers one test per case), `script.py BINARY
--list` lists them. Each case raises AssertionError to fail, or Skip (exit 77, which
CTest reports as skipped) when this machine cannot run it."""

import sys

SKIP_EXIT = 77


class Skip(Exception):
    """Raised by a case that cannot run here; its text says why."""


def run_cases(namespace, usage, set_binary):
    """Runs the case named on the command line among namespace's test_* functions."""
    cases = {name[len("test_"):]: fn for name, fn in namespace.items()
             if name.startswith("test_") and callable(fn)}
    if len(sys.argv) != 3:
        sys.exit(usage)
    set_binary(sys.argv[1])
    if sys.argv[2] == "--list":
        print("\n".join(cases))
        return
    if sys.argv[2] not in cases:
        sys.exit(f"unknown case {sys.argv[2]} (cases: {', '.join(cases)})")
    try:
        cases[sys.argv[2]]()
    except Skip as why:
        print(f"{sys.argv[2]}: SKIP: {why}")
        sys.exit(SKIP_EXIT)
    print(f"{sys.argv[2]}: ok")
