"""``python -m interplace_analysis export``: row counts and values against the fixture."""

from __future__ import annotations

import pandas as pd
import pytest
from resultfile import PATTERN, Cfg, fixture_configs, write_fixture, write_result_file

from interplace_analysis import load_results
from interplace_analysis.cli import main


def _read(path):
    return pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("version", [1, 3])
def test_export_writes_the_tidy_tables(tmp_path, fmt, version, capsys):
    path = write_fixture(tmp_path / "sweep.h5", format_version=version)
    out = tmp_path / "out"
    assert main(["export", str(path), "--format", fmt, "--out", str(out)]) == 0
    assert capsys.readouterr().out.split() == [str(out / f"{t}.{fmt}")
                                               for t in ("steps", "configs", "evaluations")]
    cfgs = fixture_configs()
    steps = _read(out / f"steps.{fmt}")
    # One row per trained configuration x step (warm-up + measured) x rank.
    assert len(steps) == sum((1 + len(c.measured())) * c.devices for c in cfgs if c.with_data)
    assert list(steps.columns[:4]) == ["config_id", "run_id", "step", "rank"]
    first = cfgs[0]
    row = steps[(steps["config_id"] == first.config_id()) & (steps["step"] == 3)
                & (steps["rank"] == 1)]
    assert len(row) == 1
    row = row.iloc[0]
    assert row["step_s"] == pytest.approx(PATTERN[2])
    assert row["forward_s"] == pytest.approx(0.3 * PATTERN[2])
    assert row["bytes_sent"] == 1000 and row["peak_memory_bytes"] == 2 << 20
    assert (row["model"], row["order"], row["placer"], row["devices"]) == (
        "resnet20", "topo", "contiguous", 2)
    assert row["strategy_label"] == "global/gpipe" and not row["warmup"]
    gpt = steps[steps["model"] == "gpt-small"]
    assert set(gpt["order"]) == {"bfs"} and len(gpt) == 9 * 2

    configs = _read(out / f"configs.{fmt}")
    assert len(configs) == len(cfgs)
    assert configs["config_id"].tolist()[0] == first.config_id()
    assert configs["step_time_s"].iloc[0] == pytest.approx(1.005)
    assert sorted(configs["status"].unique()) == ["failed", "ok", "skipped"]


def test_export_refuses_bad_input(tmp_path, capsys):
    bad = tmp_path / "notes.h5"
    bad.write_text("not a result file\n")
    assert main(["export", str(bad), "--format", "csv", "--out", str(tmp_path / "o")]) == 2
    assert "not an HDF5 file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit) as e:
        main(["export", str(bad), "--format", "xlsx", "--out", str(tmp_path / "o")])
    assert e.value.code == 2
    assert main(["export", str(bad), "--format", "csv", "--tables", "configs,curves",
                 "--out", str(tmp_path / "o")]) == 2
    assert "unknown export table 'curves' (valid: steps, configs, evaluations)" in \
        capsys.readouterr().err


def test_export_of_the_evaluations_alone(tmp_path, capsys):
    # Two runs with evaluations after epochs 1 and 2 (steps 3 and 7), one without.
    cfgs = [Cfg(strategy="local", pipeline="gpipe", devices=2, seed=seed, index=seed,
                micro_batches=4, eval_accuracy=0.8 + seed / 100,
                evaluations=[(1.0, 3, 1.0, 0.7, 64), (2.0, 7, 0.5, 0.8 + seed / 100, 64)])
            for seed in (1, 2)]
    cfgs.append(Cfg(strategy="global", pipeline="gpipe", devices=2, seed=1, index=3))
    path = write_result_file(tmp_path / "ev.h5", cfgs)
    out = tmp_path / "out"
    assert main(["export", str(path), "--format", "csv", "--tables", "evaluations,configs",
                 "--out", str(out)]) == 0
    # The order of the table list, not of the argument.
    assert capsys.readouterr().out.split() == [str(out / "configs.csv"),
                                               str(out / "evaluations.csv")]
    assert not (out / "steps.csv").exists()
    ev = pd.read_csv(out / "evaluations.csv")
    assert len(ev) == 4
    assert list(ev.columns[:2]) == ["config_id", "run_id"]
    assert set(ev["strategy"]) == {"local"} and set(ev["devices"]) == {2}
    loaded = load_results([path]).evaluations
    assert ev["accuracy"].tolist() == pytest.approx(loaded["accuracy"].tolist())
    assert ev.groupby("seed")["accuracy"].max().tolist() == pytest.approx([0.81, 0.82])
