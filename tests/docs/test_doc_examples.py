#!/usr/bin/env python3
"""Checks that the marked examples in docs/*.md print what the real binary prints.

Usage: test_doc_examples.py BUILD [--tool PATH]... [DOC.md ...]            check
       test_doc_examples.py --update BUILD [--tool PATH]... [DOC.md ...]   rewrite outputs
BUILD is a build directory (its runs/interplace and tests/docs/schedule_grid) or the
interplace binary itself; --tool names another program examples may call (CTest passes
schedule_grid this way). Without DOC.md arguments every docs/*.md of this checkout is read.

A checked example is a ```console block right after a line `<!-- doc-example -->`:

    <!-- doc-example -->
    ```console
    $ interplace order --model resnet20 --order topo | head -3
    conv1
    bn1
    relu1
    ```

Every line starting with `$ ` is a command (a trailing backslash continues it on the next
line); the lines up to the next command or the end of the block are what it prints, stdout
then stderr, as the reader would see them in a terminal. The command must start with
`interplace` or a tool's name (`schedule_grid`, tests/docs/schedule_grid.cpp); it runs in
/bin/sh from the repository root with the programs' directories first on PATH, so pipes
(`| head -5`) work. Only examples whose output is deterministic
belong here: the placement subcommands on the roofline device presets, no timings.

Normalisation (the one exception to an exact comparison): the placer's wall time, a
measurement, is masked: the number after `placer wall time:` in text output and the value
of "placer_wall_s" in JSON. --update keeps a block's documented text when it equals the
new output after masking, so regenerating does not churn those numbers.

Only the standard library, so that /usr/bin/python3 runs it as is.
"""
import difflib
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARKER = "<!-- doc-example -->"
PROGRAMS = ("interplace", "schedule_grid")
MASKS = [
    (re.compile(r"(placer wall time:\s+)\S+ \S+"), r"\1<wall time>"),
    (re.compile(r'("placer_wall_s":\s*)[-+0-9.eE]+'), r"\1<wall time>"),
]


def normalise(text):
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


class Example:
    """One command of a marked block: where it sits in the file, and what it shows."""

    def __init__(self, path, line, command, output_start, output_end, documented):
        self.path = path
        self.line = line  # 1-based line of the `$ ` line, for messages
        self.command = command
        self.output_start = output_start  # 0-based line indices [start, end) of the output
        self.output_end = output_end
        self.documented = documented  # list of lines


def parse(path):
    """The examples of one Markdown file; raises ValueError for a malformed marked block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    examples = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != MARKER:
            i += 1
            continue
        where = f"{path}:{i + 1}"
        if i + 1 >= len(lines) or lines[i + 1].strip() != "```console":
            raise ValueError(f"{where}: {MARKER} must be followed by a ```console block")
        j = i + 2
        end = j
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{where}: unterminated ```console block")
        if j == end or not lines[j].startswith("$ "):
            raise ValueError(f"{where}: the block must start with a `$ interplace ...` line")
        while j < end:
            start_line = j
            command = lines[j][2:]
            while command.endswith("\\"):
                j += 1
                if j >= end:
                    raise ValueError(f"{path}:{start_line + 1}: continuation past the block")
                command = command[:-1].rstrip() + " " + lines[j].strip()
            j += 1
            if command.split()[0] not in PROGRAMS:
                raise ValueError(f"{path}:{start_line + 1}: commands must start with one of "
                                 + ", ".join(PROGRAMS))
            out_start = j
            while j < end and not lines[j].startswith("$ "):
                j += 1
            examples.append(Example(path, start_line + 1, command, out_start, j,
                                    lines[out_start:j]))
        i = end + 1
    return examples


def run(programs, command):
    env = dict(os.environ)
    dirs = [os.path.dirname(os.path.abspath(p)) for p in programs]
    env["PATH"] = os.pathsep.join(dirs + [env.get("PATH", "")])
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.run(["/bin/sh", "-c", command], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    text = proc.stdout + proc.stderr
    if text.endswith("\n"):
        text = text[:-1]
    # A blank line closes a command's output in the docs; trailing blank lines are not shown.
    return text.rstrip("\n").split("\n") if text else []


def strip_trailing_blanks(lines):
    lines = list(lines)
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def check(programs, paths, build_arg):
    failures = 0
    count = 0
    for path in paths:
        for ex in parse(path):
            count += 1
            actual = run(programs, ex.command)
            documented = strip_trailing_blanks(ex.documented)
            if normalise("\n".join(actual)) == normalise("\n".join(documented)):
                continue
            failures += 1
            # The diff of the masked texts: only what makes the example fail.
            diff = difflib.unified_diff(normalise("\n".join(documented)).split("\n"),
                                        normalise("\n".join(actual)).split("\n"),
                                        "documented", "actual", lineterm="")
            print(f"{os.path.relpath(path, REPO)}:{ex.line}: $ {ex.command}")
            print("\n".join(diff))
            print()
    if count == 0:
        print("no marked examples found", file=sys.stderr)
        return 1
    print(f"{count - failures} of {count} doc examples match"
          + ("" if failures == 0 else
             f"; if the binary is right, regenerate with: {sys.argv[0]} --update {build_arg}"))
    return 1 if failures else 0


def update(programs, paths):
    changed = 0
    for path in paths:
        examples = parse(path)
        if not examples:
            continue
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        # From the last example back, so earlier indices stay valid.
        for ex in reversed(examples):
            actual = run(programs, ex.command)
            documented = strip_trailing_blanks(ex.documented)
            if normalise("\n".join(actual)) == normalise("\n".join(documented)):
                continue
            # Keep the blank line that separates this command from the next one.
            gap = ex.documented[len(documented):]
            lines[ex.output_start:ex.output_end] = actual + gap
            changed += 1
            print(f"updated {os.path.relpath(path, REPO)}:{ex.line}: $ {ex.command}")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    print(f"{changed} example(s) updated")
    return 0


def main(argv):
    args = argv[1:]
    updating = bool(args) and args[0] == "--update"
    if updating:
        args = args[1:]
    if not args:
        sys.exit(__doc__)
    binary = args.pop(0)
    build_arg = binary
    programs = []
    if os.path.isdir(build_arg):
        binary = os.path.join(build_arg, "runs", "interplace")
        grid = os.path.join(build_arg, "tests", "docs", "schedule_grid")
        if os.access(grid, os.X_OK):
            programs.append(grid)
    while len(args) >= 2 and args[0] == "--tool":
        programs.append(args[1])
        build_arg += " --tool " + args[1]
        args = args[2:]
    programs.insert(0, binary)
    for program in programs:
        if not os.access(program, os.X_OK):
            sys.exit(f"no executable program at {program}")
    paths = [os.path.abspath(p) for p in args]
    if not paths:
        docs = os.path.join(REPO, "docs")
        paths = sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    try:
        return update(programs, paths) if updating else check(programs, paths, build_arg)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
