"""The strategies report from exported tables (exported.py): the runs of an export
directory (`export --tables configs,evaluations`) give the same accuracy, selection,
difference and time-to-target tables as their HDF5 files, alone or beside other files."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from resultfile import Cfg, write_result_file

from interplace_analysis import load_results
from interplace_analysis import strategy_study as study
from interplace_analysis.cli import main

# Test accuracy after epochs 1, 2, 3 per (label, seed); validation peaks at epoch 2 for
# local and at epoch 3 for the others, so the selected test accuracy differs from the final.
LABELS = ("e2e", "local", "pairwise")
SEEDS = (1, 2, 3)
# Tables computed from the evaluations and the final accuracy alone.
ACCURACY_TABLES = ("accuracy_", "accuracy_differences", "loss_differences", "selected_",
                   "selected_accuracy_differences", "time_to_target")


def _cfg(label: str, seed: int, index: int) -> Cfg:
    strategy, pipeline = ("global", "e2e") if label == "e2e" else (label, "gpipe")
    base = {"e2e": 0.90, "local": 0.80, "pairwise": 0.85}[label] + seed / 200
    val = [base - 0.05, base + (0.02 if label == "local" else 0.0), base + 0.01]
    test = [base - 0.06, base - 0.01 * seed, base]
    evaluations = [(float(e + 1), 4 * e + 3, 0.5, test[e], 64, 0.4, val[e], 32)
                   for e in range(3)]
    return Cfg(strategy=strategy, pipeline=pipeline, devices=2, seed=seed, index=index,
               micro_batches=1 if label == "e2e" else 4, eval_accuracy=base,
               evaluations=evaluations)


def _write(path, pairs):
    return write_result_file(path, [_cfg(label, seed, i) for i, (label, seed) in
                                    enumerate(pairs)])


def _export(h5, out, capsys):
    assert main(["export", str(h5), "--format", "csv", "--tables", "configs,evaluations",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    return out


def _report(inputs, out, capsys, *extra):
    assert main(["strategies", *map(str, inputs), "--out", str(out), "--quiet", *extra]) == 0
    capsys.readouterr()
    return out


def _tables(out) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_csv(p) for p in sorted((out / "tables").glob("*.csv"))}




@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("exported")
    every = [(label, seed) for label in LABELS for seed in SEEDS]
    return {"all": _write(d / "all.h5", every),
            "seeds12": _write(d / "s12.h5", [p for p in every if p[1] != 3]),
            "seed3": _write(d / "s3.h5", [p for p in every if p[1] == 3])}


def _accuracy_tables(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return {name: frame for name, frame in tables.items()
            if name.startswith(ACCURACY_TABLES)}


def test_an_export_directory_gives_the_hdf5_files_accuracy_tables(files, tmp_path, capsys):
    times = tmp_path / "times.csv"
    pd.DataFrame({"model": ["resnet20"] * 3, "strategy_label": list(LABELS),
                  "step_time_s": [2.0, 1.0, 1.2], "source": ["sim"] * 3}).to_csv(times)
    from_h5 = _tables(_report([files["all"]], tmp_path / "h5", capsys, "--step-times",
                              str(times)))
    exported = _export(files["all"], tmp_path / "export", capsys)
    out = _report([exported], tmp_path / "csv", capsys, "--step-times", str(times))
    from_csv = _tables(out)
    expected = _accuracy_tables(from_h5)
    assert len(expected) == len(ACCURACY_TABLES)
    assert _accuracy_tables(from_csv).keys() == expected.keys()
    for name, frame in expected.items():
        pd.testing.assert_frame_equal(from_csv[name], frame, obj=name)
    # The selection is not the final evaluation: local's validation peaks at epoch 2.
    sel = expected["selected_resnet20"].set_index("strategy")
    assert sel.loc["local", "selected_epoch"] == "2, 2, 2"
    # What needs each step's timings is left out, and the report says why.
    assert "time_resnet20" in from_h5 and "time_resnet20" not in from_csv
    assert "ranks_resnet20" not in from_csv
    text = (out / "strategies.md").read_text()
    assert "only the HDF5 files hold" in text
    assert (out / "plots" / "accuracy_vs_time_resnet20.png").is_file()


def test_files_and_directories_combine_by_seed(files, tmp_path, capsys):
    # Seeds 1 and 2 from an HDF5 file, seed 3 from an export of another: the same paired
    # comparisons over three seeds as the file of all nine runs.
    whole = _accuracy_tables(_tables(_report([files["all"]], tmp_path / "all", capsys)))
    seed3 = _export(files["seed3"], tmp_path / "seed3", capsys)
    mixed = _tables(_report([files["seeds12"], seed3], tmp_path / "mixed", capsys))
    for name, frame in whole.items():
        pd.testing.assert_frame_equal(mixed[name], frame, obj=name)
    d = mixed["accuracy_differences_resnet20"].set_index(["a", "b"])
    assert d.loc[("pairwise", "local"), "seeds"] == 3
    assert d.loc[("pairwise", "local"), "mean"] == pytest.approx(0.05)


def test_a_run_given_twice_is_refused(files, tmp_path, capsys):
    seed3 = _export(files["seed3"], tmp_path / "seed3", capsys)
    assert main(["strategies", str(files["all"]), str(seed3), "--out",
                 str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "seed 3" in err and "finished in more than one input" in err
    assert not (tmp_path / "r").exists()


def test_an_incomplete_export_directory_is_refused(files, tmp_path, capsys):
    d = _export(files["seed3"], tmp_path / "d", capsys)
    (d / "evaluations.csv").unlink()
    assert main(["strategies", str(d), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "no evaluations.csv" in err and "HINT: python -m interplace_analysis export" in err
    (d / "evaluations.csv").write_text("run_id,epoch\n1,2\n")
    assert main(["strategies", str(d), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    assert "missing column(s) strategy_label" in capsys.readouterr().err


def test_loaded_results_build_every_table(files):
    results = load_results([files["all"]])
    report = study.build_for_results(results)
    for fig in report.figures.values():
        plt.close(fig)
    names = {t.name for t in report.tables}
    assert {"time_resnet20", "ranks_resnet20", "passthrough_resnet20"} <= names
