"""Command line: ``python -m interplace_analysis report FILE [FILE...] --out DIR``.

Like the ``interplace`` binary: bad input (a missing, non-HDF5, non-result or
other-version file) is one line on stderr and exit status 2, not a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .h5file import ResultFormatError
from .loader import load_results


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m interplace_analysis",
                                description="Tables and plots from interplace result files.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="write tables (Markdown, CSV, LaTeX) and plots",
                       description="Loads the result files and writes DIR/report.md,"
                                   " DIR/tables/*.{md,csv,tex} and DIR/plots/*.png; prints"
                                   " the Markdown report.")
    r.add_argument("files", nargs="+", metavar="FILE", help="HDF5 result files")
    r.add_argument("--out", required=True, type=Path, metavar="DIR", help="output directory")
    r.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    r.add_argument("--accuracy-tolerance", type=float, default=0.01, metavar="A",
                   help="largest accuracy cost vs global a recommended strategy may have"
                        " (default 0.01 = one percentage point)")
    r.add_argument("--quiet", action="store_true", help="do not print the report")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        results = load_results(args.files)
    except ResultFormatError as e:
        print(f"interplace_analysis: {e}", file=sys.stderr)
        return 2
    from .report import build_report, write_report  # matplotlib: only once input is good

    report = build_report(results, seed=args.seed, tolerance=args.accuracy_tolerance)
    try:
        text, written = write_report(results, report, args.out)
    except OSError as e:
        print(f"interplace_analysis: cannot write the report to {args.out}: {e}",
              file=sys.stderr)
        return 1
    if not args.quiet:
        print(text)
    print(f"interplace_analysis: wrote {len(written)} files under {args.out}", file=sys.stderr)
    return 0
