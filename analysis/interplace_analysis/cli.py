"""Command line: ``python -m interplace_analysis report FILE [FILE...] --out DIR``,
``python -m interplace_analysis compare BASE NEW [--out DIR] [--format text|json|md]
[--min-effect D]`` and
``python -m interplace_analysis export FILE [FILE...] --format csv|parquet --out DIR`` and
``python -m interplace_analysis order-study FILE [FILE...] --out DIR`` (the simulate-only
configurations of result files: the traversal-order study) and
``python -m interplace_analysis strategies FILE [FILE...] --out DIR [--step-times CSV]``.

Like the ``interplace`` binary: bad input (a missing, non-HDF5, non-result or
other-version file) is one line on stderr and exit status 2, not a traceback.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from . import stats
from .h5file import ResultFormatError
from .loader import load_results


def _min_effect(text: str) -> float:
    value = float(text)
    if not value >= 0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _add_min_effect(p: argparse.ArgumentParser) -> None:
    d = stats.MIN_EFFECT
    p.add_argument("--min-effect", type=_min_effect, default=d, metavar="D",
                   help="smallest change of a ratio a verdict names: faster/slower (beats,"
                        " beyond noise) only when the 95%% interval lies wholly outside"
                        f" [1/(1+D), 1+D] (default {d:g} = {100 * d:g}%%; 0: the"
                        " interval need only exclude 1)")


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
    _add_min_effect(r)
    r.add_argument("--quiet", action="store_true", help="do not print the report")
    c = sub.add_parser("compare", help="NEW / BASE step time and throughput per configuration",
                       description="Matches configurations of two result files by id and"
                                   " prints, per configuration and per (model, strategy),"
                                   " the ratios NEW/BASE of step time and throughput with"
                                   " 95%% intervals over runs and a verdict (faster, slower,"
                                   " same, not enough runs), plus configurations in only"
                                   " one file.")
    c.add_argument("base", metavar="BASE", help="HDF5 result file (the reference)")
    c.add_argument("new", metavar="NEW", help="HDF5 result file (compared with BASE)")
    c.add_argument("--out", type=Path, metavar="DIR",
                   help="also write DIR/compare.{md,json} and DIR/tables/*")
    c.add_argument("--format", choices=("text", "json", "md"), default="text",
                   help="what to print (default text)")
    c.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    _add_min_effect(c)
    c.add_argument("--quiet", action="store_true",
                   help="print nothing (with --out: only the files)")
    from .export import FORMATS, TABLES
    e = sub.add_parser("export", help="the tidy tables as CSV or Parquet",
                       description="Loads the result files and writes DIR/steps.FORMAT (one"
                                   " row per run, step and rank, with the run's"
                                   " configuration as columns), DIR/configs.FORMAT (one"
                                   " row per run) and DIR/evaluations.FORMAT (one row per"
                                   " run and evaluation during training).")
    e.add_argument("files", nargs="+", metavar="FILE", help="HDF5 result files")
    e.add_argument("--format", choices=FORMATS, required=True, help="file format")
    e.add_argument("--tables", default=",".join(TABLES), metavar="LIST",
                   help=f"comma-separated tables to write (default {','.join(TABLES)}):"
                        " configs,evaluations is what the strategies report's accuracy"
                        " tables need, a few kB per run")
    e.add_argument("--out", required=True, type=Path, metavar="DIR", help="output directory")
    o = sub.add_parser("order-study", help="the traversal-order study's tables and plots",
                       description="Loads result files of simulate-only sweeps (the study's"
                                   " spec: runs/configs/wang2022-order-study.toml) and"
                                   " writes DIR/report.md, DIR/tables/* and DIR/plots/*: best"
                                   " order per model and family with 95%% intervals over"
                                   " seeds, the order effect (Friedman test), graph features"
                                   " per order, learning curves.")
    o.add_argument("files", nargs="+", metavar="FILE", help="HDF5 result files")
    o.add_argument("--out", required=True, type=Path, metavar="DIR", help="output directory")
    o.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    o.add_argument("--quiet", action="store_true", help="do not print the report")
    t = sub.add_parser("strategies", help="the backprop-strategies comparison (issue #17)",
                       description="Per model: final test accuracy per strategy over seeds"
                                   " (t intervals), paired differences, time per step and"
                                   " epoch, per-rank times, accuracy against epochs and"
                                   " against a comparable time. Writes DIR/strategies.md,"
                                   " DIR/tables/* and DIR/plots/*.")
    t.add_argument("files", nargs="+", metavar="FILE",
                   help="HDF5 result files, or directories of exported tables (`export"
                        " --tables configs,evaluations`): their runs count in the accuracy"
                        " tables, and the tables of step timings are left out")
    t.add_argument("--out", required=True, type=Path, metavar="DIR", help="output directory")
    t.add_argument("--step-times", type=Path, metavar="CSV",
                   help="comparable step time per strategy: columns model, strategy_label,"
                        " step_time_s[, source] (default: the measured wall-clock times)")
    t.add_argument("--title", default="Backprop strategies", help="the report's heading")
    t.add_argument("--quiet", action="store_true", help="do not print the report")
    return p


def _order_study(args: argparse.Namespace, argv: list[str]) -> int:
    from . import order_study
    try:
        study = order_study.load_order_study(args.files)
    except ResultFormatError as e:
        print(f"interplace_analysis: {e}", file=sys.stderr)
        return 2
    try:
        text = order_study.write_report(study, args.out, seed=args.seed,
                                        command=command_line(argv))
    except OSError as e:
        print(f"interplace_analysis: cannot write to {args.out}: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(text)
    return 0


def _strategies(args: argparse.Namespace, argv: list[str]) -> int:
    from . import exported
    from . import strategy_study as strategies
    directories = [f for f in args.files if exported.is_export_directory(f)]
    files = [f for f in args.files if not exported.is_export_directory(f)]
    try:
        results = load_results(files) if files else None
        parts = [exported.read_export_directory(d) for d in directories]
        if results is not None:
            parts.insert(0, exported.from_results(results))
        tables = exported.combine(parts)
        step_times = (strategies.read_step_times(args.step_times)
                      if args.step_times is not None else None)
    except (ResultFormatError, ValueError, OSError) as e:
        print(f"interplace_analysis: {e}", file=sys.stderr)
        return 2
    report = strategies.build(tables, None if directories else results, step_times)
    try:
        text, written = strategies.write(report, args.out, args.title, command_line(argv))
    except OSError as e:
        print(f"interplace_analysis: cannot write to {args.out}: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(text)
    print(f"interplace_analysis: wrote {len(written)} files under {args.out}", file=sys.stderr)
    return 0


def _export(args: argparse.Namespace) -> int:
    from . import export
    try:
        which = export.parse_tables(args.tables)
        results = load_results(args.files)
    except (ResultFormatError, ValueError) as e:
        print(f"interplace_analysis: {e}", file=sys.stderr)
        return 2
    try:
        written = export.write_tables(results, args.out, args.format, which)
    except OSError as e:
        print(f"interplace_analysis: cannot write to {args.out}: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from . import compare
    if args.out is None and args.quiet:
        print("interplace_analysis: compare --quiet without --out would show nothing."
              "\nHINT: add --out DIR, or leave out --quiet", file=sys.stderr)
        return 2
    try:
        base, new = load_results([args.base]), load_results([args.new])
    except ResultFormatError as e:
        print(f"interplace_analysis: {e}", file=sys.stderr)
        return 2
    c = compare.compare_results(base, new, seed=args.seed, base_name=str(args.base),
                                new_name=str(args.new), min_effect=args.min_effect)
    if args.out is not None:
        try:
            compare.write(c, args.out)
        except OSError as e:
            print(f"interplace_analysis: cannot write to {args.out}: {e}", file=sys.stderr)
            return 1
    if not args.quiet:
        print({"text": compare.to_text, "json": compare.to_json,
               "md": compare.to_markdown_text}[args.format](c))
    return 0


def command_line(argv: list[str]) -> str:
    """The command as a shell would take it back, for the report's provenance."""
    return shlex.join(["python", "-m", "interplace_analysis", *argv])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.command == "compare":
        return _compare(args)
    if args.command == "export":
        return _export(args)
    if args.command == "order-study":
        return _order_study(args, argv)
    if args.command == "strategies":
        return _strategies(args, argv)
    try:
        results = load_results(args.files)
    except ResultFormatError as e:
        print(f"interplace_analysis: {e}", file=sys.stderr)
        return 2
    from .report import build_report, write_report  # matplotlib: only once input is good

    report = build_report(results, seed=args.seed, tolerance=args.accuracy_tolerance,
                          command=command_line(argv), min_effect=args.min_effect)
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
