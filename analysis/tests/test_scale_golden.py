"""The report's and compare's tables, pinned byte for byte.

``golden/`` holds the CSV files (full precision) of every report and compare table for the
files below. They were first written by the analysis at commit dd06438 (branch
results-scale, before the tables were rewritten to work on positions, to read step times
only when an interval needs them and curves as arrays), and every table of the rewritten
code came out the same. Regenerated once since, when a run's within-run replicates
became drawn once per run rather than once per comparison (issue #36): checked first that
only the interval ends of rows resting on one run's steps changed, and the evidence text
quoting them (with the tables' later columns, now pinned too). The files: the fixture
(format version 3), and two files of the fixture's configurations with repeats (5 runs
each, and a mix of 1 and 5 runs with a 3% slowdown), so that both interval paths (runs and
the within-run block bootstrap) and compare's per-configuration and per-family rows are
covered.

A table may gain columns: the golden file's columns must be there and hold the same bytes.

Regenerate (only when a change of results is intended, and say so in the commit):
``PYTHONPATH=<old checkout>/analysis python analysis/tests/test_scale_golden.py DIR``.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resultfile  # noqa: E402

GOLDEN = HERE / "golden"


def write_inputs(directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"fixture": resultfile.write_fixture(directory / "fixture.h5", 3)}
    repeated, mixed = [], []
    for i, c in enumerate(resultfile.fixture_configs()):
        if c.status != "ok":
            repeated.append(c)
            mixed.append(c)
            continue
        repeated += resultfile.repeated(c, 5, seed=i)
        mixed += resultfile.repeated(c, 5 if i % 2 else 1, seed=100 + i, factor=1.03)
    paths["repeated"] = resultfile.write_result_file(directory / "repeated.h5", repeated,
                                                     format_version=3)
    paths["mixed"] = resultfile.write_result_file(directory / "mixed.h5", mixed,
                                                  format_version=3)
    return paths


def outputs(paths: dict[str, Path]) -> dict:
    """Per output name, the table: every report table of each file, and compare's tables
    of repeated (BASE) against mixed (NEW) and of mixed against itself."""
    from interplace_analysis import load_results
    from interplace_analysis.compare import compare_results
    from interplace_analysis.report import build_report
    out = {}
    loaded = {name: load_results([p]) for name, p in paths.items()}
    for name, results in loaded.items():
        for t in build_report(results, seed=0).tables:
            out[f"report_{name}_{t.name}.csv"] = t.frame
    for label, (b, n) in {"repeated_vs_mixed": ("repeated", "mixed"),
                          "mixed_vs_mixed": ("mixed", "mixed")}.items():
        c = compare_results(loaded[b], load_results([paths[n]]), seed=0)
        for part in ("configs", "families", "unmatched"):
            out[f"compare_{label}_{part}.csv"] = getattr(c, part)
    return out


def test_tables_are_the_golden_ones(tmp_path):
    got = outputs(write_inputs(tmp_path))
    expected = sorted(p.name for p in GOLDEN.glob("*.csv"))
    assert expected, f"no golden files in {GOLDEN}"
    assert sorted(got) == expected
    differ = []
    for name in expected:
        text = (GOLDEN / name).read_text(encoding="utf-8")
        columns = next(csv.reader(io.StringIO(text)))
        missing = [c for c in columns if c not in got[name].columns]
        assert not missing, f"{name}: columns gone: {missing}"
        if got[name][columns].to_csv(index=False) != text:
            differ.append(name)
    assert not differ, f"tables differ from the golden files: {differ}"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    import tempfile
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, frame in outputs(write_inputs(Path(tmp))).items():
            (target / name).write_text(frame.to_csv(index=False), encoding="utf-8")
    print(f"wrote {len(list(target.glob('*.csv')))} files to {target}")
else:
    pytest.importorskip("interplace_analysis")
