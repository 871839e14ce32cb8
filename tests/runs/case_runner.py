"""The command line shared by the CLI test scripts: `script.py BINARY CASE` runs one
test_* function of the script (CTest registers one test per case), `script.py BINARY
--list` lists them. Each case raises AssertionError to fail."""

import sys


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
    cases[sys.argv[2]]()
    print(f"{sys.argv[2]}: ok")
