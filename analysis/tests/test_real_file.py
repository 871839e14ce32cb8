"""A result file written by the C++ writer (``interplace sweep``), when one is given.

Set ``INTERPLACE_RESULT_FILE=/path/to/file.h5`` (the smoke sweep's output) to check
that the loader reads what the real writer writes and the report builds from it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from interplace_analysis import load_results
from interplace_analysis.cli import main

REAL = os.environ.get("INTERPLACE_RESULT_FILE", "")


@pytest.mark.skipif(not REAL, reason="INTERPLACE_RESULT_FILE is not set: no result file from "
                                     "the C++ writer to check (set it to a sweep's .h5 file)")
def test_real_result_file_loads_and_reports(tmp_path, capsys):
    path = Path(REAL)
    assert path.is_file(), f"INTERPLACE_RESULT_FILE={REAL} does not exist"
    r = load_results([path])
    c = r.configs
    assert len(c) > 0, "the file holds no configurations"
    assert c["config_id"].str.fullmatch(r"[0-9a-f]{16}").all()
    assert set(c["status"]) <= {"ok", "failed", "skipped", "diverged"}
    ok = r.ok
    for _, row in ok.iterrows():
        assert row["step_time_s"] > 0 and row["measured_steps"] == row["steps"]
        assert 0 <= row["utilisation"] <= 1 + 1e-9 and -1e-9 <= row["idle_fraction"] <= 1
    if len(ok):
        s = r.steps[r.steps["config_id"] == ok["config_id"].iloc[0]]
        assert len(s) == (ok["warmup_steps"].iloc[0] + ok["steps"].iloc[0]) * ok["devices"].iloc[0]
    assert main(["report", str(path), "--out", str(tmp_path / "report"), "--quiet"]) == 0
    assert (tmp_path / "report" / "report.md").is_file()


@pytest.mark.skipif(not REAL, reason="INTERPLACE_RESULT_FILE is not set")
def test_real_result_file_has_named_dimensions():
    """Version 3 as the C++ writer writes it: xarray (h5netcdf) names every axis."""
    import xarray as xr
    with xr.open_datatree(REAL, engine="h5netcdf") as tree:
        trained = [node for node in tree["configs"].children.values() if "ranks" in node]
        assert trained, "no trained configuration in the file"
        for node in trained:
            k = int(node.attrs["devices"])
            s = int(node.attrs["warmup_steps"]) + int(node.attrs["steps"])
            assert node.sizes["rank"] == k and node.sizes["step"] == s
            assert all(v.dims == ("step", "rank") for v in node["ranks"].data_vars.values())
            assert node["steps/step_time_s"].dims == ("step",)
            assert node["steps/aux_loss"].dims == ("step", "rank")
            assert node["timeline/kind"].dims == ("event",)
            assert node["order"].dims == ("node",)
            assert node["ranks/step_s"].attrs["units"] == "s"
        assert not any(d.startswith("phony_dim") for n in tree.subtree for d in n.dims)


@pytest.mark.skipif(not REAL, reason="INTERPLACE_RESULT_FILE is not set")
def test_real_file_measured_and_simulated_timelines_carry_actions():
    """The C++ writer's timelines name their schedule actions, and every run has the
    simulator's first step beside it: the figure draws both, bars labelled F0, B0, ..."""
    import matplotlib.pyplot as plt

    from interplace_analysis import plots

    r = load_results([Path(REAL)])
    both = [rid for rid in r.timelines if rid in r.predicted_timelines]
    assert both, "no run has both a measured and a simulated timeline"
    for rid in both:
        for frame in (r.timelines[rid], r.predicted_timelines[rid]):
            compute = frame[frame["kind"] != "comm_wait"]
            labels = {a.decode() if isinstance(a, bytes) else a for a in compute["action"]}
            assert all(lab == "S" or (lab[0] in "FBbHh" and lab[1:].isdigit())
                       for lab in labels), labels
            assert {lab[0] for lab in labels} >= {"F", "S"}, labels
    # Labelled bars need room: the run with the fewest simulated events (a stage chain's
    # whole-stage passes rather than a node-level schedule's single nodes).
    fig = plots.measured_vs_predicted_timeline(
        r, min(both, key=lambda rid: len(r.predicted_timelines[rid])))
    assert fig is not None and len(fig.axes) == 2
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert any(t.startswith("F") for t in texts), texts
    plt.close(fig)


@pytest.mark.skipif(not REAL, reason="INTERPLACE_RESULT_FILE is not set")
def test_summary_table_says_what_the_groups_say():
    """The C++ writer's summary table (/summary) gives the configs frame the groups give,
    column for column (the loader reads the table; read_result_file reads every group)."""
    import h5py
    import numpy as np

    from interplace_analysis import frames, h5file, loader, schema
    path = Path(REAL)
    with h5py.File(path, "r") as f:
        assert "summary" in f, "the writer wrote no summary table"
        assert sorted(f["summary"]["id"].asstr()[()]) == sorted(f["configs"])
    fast = load_results([path])
    assert not any("summary table" in n for n in fast.notes), fast.notes
    contents = h5file.read_result_file(path)
    records = contents.configs
    loader._identify_runs(records, [])
    # The parameter columns of the file's own schema, as the loader takes them.
    written = schema.of_provenance(contents.provenance)
    assert written.source == "file" and written.pipeline_names() == fast.schema.pipeline_names()
    slow = pd.DataFrame([frames.config_row(r, written) for r in records]).sort_values(
        ["file", "index"], kind="stable").reset_index(drop=True)
    assert list(fast.configs.columns) == list(slow.columns)
    for c in slow.columns:
        a, b = fast.configs[c], slow[c]
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            assert np.allclose(a.astype(float), b.astype(float), rtol=1e-12, equal_nan=True), c
        else:
            assert (a.astype(str) == b.astype(str)).all(), c
    # Per-step data read per run equals the group's.
    for rid in fast.ok["run_id"]:
        rec = next(r for r in records if r.run_id == rid)
        st = np.asarray(rec.steps["step_time_s"], dtype=float)[frames.measured_mask(rec)]
        assert np.array_equal(fast.measured_step_times(rid), st)
