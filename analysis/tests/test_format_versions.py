"""Format version 3 (docs/results-format.md): the same frames as version 1 from the same
numbers, and named dimensions for netCDF-4 readers (xarray with h5netcdf)."""

from __future__ import annotations

import h5py
import pandas as pd
import pytest
import xarray as xr
from resultfile import Cfg, fixture_configs, write_fixture, write_result_file

from interplace_analysis import load_results


@pytest.fixture(scope="module")
def v3_file(tmp_path_factory):
    return write_fixture(tmp_path_factory.mktemp("v3") / "sweep.h5", format_version=3)


def test_versions_2_and_3_give_the_frames_of_version_1(results, v3_file, tmp_path):
    v2 = load_results([write_fixture(tmp_path / "v2.h5", format_version=2)])
    v3 = load_results([v3_file])
    for other in (v2, v3):
        for name in ("configs", "steps", "curves", "rank_summary"):
            a = getattr(results, name).drop(columns=["file"], errors="ignore")
            b = getattr(other, name).drop(columns=["file"], errors="ignore")
            pd.testing.assert_frame_equal(a, b, obj=name)
        assert list(other.timelines) == list(results.timelines)
    assert v2.files["format_version"].tolist() == [2]
    # Lists are string arrays in version 3 and joined text before; the frames hold text.
    assert v3.files["hosts"].tolist() == results.files["hosts"].tolist() == ["node1,node1"]
    assert v3.files["overrides"].tolist() == ["steps=9"]


def test_model_options_are_columns_in_every_version(tmp_path):
    cfg = Cfg(model="gpt-mini", family="gpt", model_options="sequence_length=32,"
                                                             "width_multiplier=0.5")
    for version in (1, 3):
        p = write_result_file(tmp_path / f"v{version}.h5", [cfg], format_version=version)
        c = load_results([p]).configs
        assert c["model_option_sequence_length"].tolist() == [32], version
        assert c["model_option_width_multiplier"].tolist() == [0.5], version
        assert c["model_options"].tolist() == ["sequence_length=32,width_multiplier=0.5"]
    with h5py.File(tmp_path / "v3.h5") as f:
        assert f["configs"][cfg.config_id()].attrs["model_option_sequence_length"] == 32


def _dims(tree: xr.DataTree, path: str) -> dict[str, tuple[str, ...]]:
    node = tree[path]
    return {name: node[name].dims for name in node.data_vars}


def test_xarray_opens_version_3_with_named_dimensions(v3_file):
    first = fixture_configs()[0]  # trained, with a timeline
    g = f"configs/{first.config_id()}"
    with xr.open_datatree(v3_file, engine="h5netcdf") as tree:
        top = tree[g]
        assert dict(top.sizes) == {"rank": 2, "node": 70, "step": 9}
        assert _dims(tree, f"{g}/ranks") == {name: ("step", "rank") for name in (
            "step_s", "forward_s", "backward_s", "aux_s", "optimizer_s", "comm_wait_s",
            "idle_s", "overhead_s", "bytes_sent", "peak_memory_bytes")}
        steps = _dims(tree, f"{g}/steps")
        assert steps["loss"] == ("step",) and steps["aux_loss"] == ("step", "rank")
        assert set(_dims(tree, f"{g}/timeline").values()) == {("event",)}
        assert set(_dims(tree, f"{g}/prediction").values()) == {("rank",)}
        assert _dims(tree, g) == {n: ("node",) for n in ("order", "placement", "node_names")}
        everything = [d for node in tree.subtree for d in node.dims]
        assert not any(d.startswith("phony_dim") for d in everything)
        step_s = tree[f"{g}/ranks/step_s"]
        assert step_s.attrs["units"] == "s"
        assert float(step_s.sel(step=3, rank=1)) == pytest.approx(first.measured()[2])
        assert list(tree.attrs["hosts"]) == ["node1", "node1"]


def test_version_1_has_only_phony_dimensions(fixture_file):
    """What version 3 fixes: without dimension scales a netCDF-4 reader can only make up
    names (phony_dim_0, ...), and axes of equal length get confused."""
    first = fixture_configs()[0]
    with xr.open_datatree(fixture_file, engine="h5netcdf", phony_dims="sort") as tree:
        dims = tree[f"configs/{first.config_id()}/ranks/step_s"].dims
        assert all(d.startswith("phony_dim") for d in dims)


def test_files_without_a_summary_table_read_group_by_group(fixture_file):
    """Files from before /summary (every version, and the fixture) read from their groups
    with nothing noted; a table that does not match the groups is not used (noted)."""
    with h5py.File(fixture_file, "r") as f:
        assert "summary" not in f
    r = load_results([fixture_file])
    assert not any("summary table" in n for n in r.notes)
    assert len(r.configs) > 0


def test_a_summary_table_that_does_not_match_its_groups_is_not_used(fixture_file, tmp_path):
    import shutil
    path = tmp_path / "mismatch.h5"
    shutil.copy(fixture_file, path)
    with h5py.File(path, "a") as f:  # one row for a file of several groups
        s = f.create_group("summary")
        s.create_dataset("id", data=["0123456789abcdef"], dtype=h5py.string_dtype())
        s.create_dataset("attributes", data=["{}"], dtype=h5py.string_dtype())
    r = load_results([path])
    assert any("does not match its configuration groups" in n for n in r.notes), r.notes
    expected = load_results([fixture_file]).configs.drop(columns=["file"])
    pd.testing.assert_frame_equal(r.configs.drop(columns=["file"]), expected)
