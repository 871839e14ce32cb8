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

A table may gain columns: the golden file's columns must be there and hold the same
values, at the tolerance of :func:`cells_differ`: a number cell within a relative 1e-9
(the last digits of a float move between CPUs: another vector ``exp``, ``log`` or sum
order), a number quoted in text within one unit of its last printed digit, everything
else byte for byte. The inputs themselves are the same bytes on every machine (the
fixture draws its noise with ``math.exp``), and nothing in the analysis seeds a resample
from a float's last digits (``stats.steps_fingerprint``), so an interval end that moves
by more than that is a finding, not noise.

Regenerate (only when a change of results is intended, and say so in the commit):
``PYTHONPATH=<old checkout>/analysis python analysis/tests/test_scale_golden.py DIR``.
"""

from __future__ import annotations

import csv
import io
import math
import re
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


REL_TOL = 1e-9
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _close(a: float, b: float, abs_tol: float = 0.0) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=abs_tol)


def _last_digit_unit(token: str) -> float:
    """One unit of the last printed digit of a number token: 1.19 -> 0.01, 3e-05 -> 1e-05;
    0 for an integer (a count, n = 5, is exact)."""
    mantissa, _, exponent = token.lower().partition("e")
    if "." not in mantissa and not exponent:
        return 0.0
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def cells_differ(golden: str, got: str) -> bool:
    """Whether a table cell differs from its golden value beyond the stated tolerance."""
    if golden == got:
        return False
    a, b = _number(golden), _number(got)
    if a is not None and b is not None:
        return not _close(a, b)
    ga, gb = NUMBER.split(golden), NUMBER.split(got)
    na, nb = NUMBER.findall(golden), NUMBER.findall(got)
    if ga != gb or len(na) != len(nb):
        return True
    return any(not _close(float(x), float(y), abs_tol=_last_digit_unit(x) * (1 + 1e-6))
               for x, y in zip(na, nb))


def differing_cells(golden_text: str, got_text: str) -> list[str]:
    """The cells (row, column: golden | got) where two CSV texts of one table differ."""
    golden = list(csv.reader(io.StringIO(golden_text)))
    got = list(csv.reader(io.StringIO(got_text)))
    if len(golden) != len(got):
        return [f"{len(golden) - 1} rows expected, {len(got) - 1} got"]
    header = golden[0]
    out = []
    for r, (row_a, row_b) in enumerate(zip(golden, got)):
        if len(row_a) != len(row_b):
            out.append(f"row {r}: {len(row_a)} cells expected, {len(row_b)} got")
            continue
        out += [f"row {r}, {header[c]}: {x!r} | {y!r}"
                for c, (x, y) in enumerate(zip(row_a, row_b)) if cells_differ(x, y)]
    return out


def test_cells_differ_at_the_stated_tolerance():
    assert not cells_differ("1.2621442838037162", "1.2621442838037165")
    assert cells_differ("0.9765542641398837", "0.9763964558402451")
    assert not cells_differ("nan", "nan") and cells_differ("nan", "1.0")
    assert not cells_differ("x1.19 [1.16, 1.22], n=5", "x1.19 [1.15, 1.22], n=5")
    assert cells_differ("x1.19 [1.16, 1.22], n=5", "x1.19 [1.14, 1.22], n=5")
    assert cells_differ("x1.19 [1.16, 1.22], n=5", "x1.19 [1.16, 1.22], n=6")
    assert cells_differ("faster x1.19", "slower x1.19")
    assert not cells_differ("p 3e-05", "p 4e-05") and cells_differ("p 3e-05", "p 5e-05")
    assert cells_differ("3e-05", "4e-05")  # a number cell: relative 1e-9
    assert differing_cells("a,b\n1,x\n", "a,b\n1.5,x\n") == ["row 1, a: '1' | '1.5'"]


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
        cells = differing_cells(text, got[name][columns].to_csv(index=False))
        if cells:
            differ.append(f"{name}: " + "; ".join(cells[:5])
                          + (f" (and {len(cells) - 5} more)" if len(cells) > 5 else ""))
    assert not differ, "tables differ from the golden files:\n" + "\n".join(differ)


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
