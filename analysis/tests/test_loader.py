"""The loader against files whose every value is known (tests/resultfile.py)."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest
import resultfile
from resultfile import PATTERN, Cfg, write_result_file

from interplace_analysis import ResultFormatError, load_results


def _row(results, **match):
    c = results.configs
    for k, v in match.items():
        c = c[c[k] == v]
    assert len(c) == 1, match
    return c.iloc[0]


def test_configs_table_has_one_row_per_group_with_parameters(results):
    c = results.configs
    assert len(c) == 11
    assert sorted(c["status"].unique()) == ["failed", "ok", "skipped"]
    topo = _row(results, order="topo", placer="contiguous", strategy="global")
    assert topo["config_id"] == resultfile.fixture_configs()[0].config_id()
    assert topo["family"] == "resnet" and topo["devices"] == 2 and topo["micro_batches"] == 4
    assert topo["strategy_label"] == "global/gpipe"
    assert _row(results, strategy="local", status="ok")["strategy_label"] == "local"


def test_medians_exclude_warmup(results):
    topo = _row(results, order="topo", placer="contiguous", strategy="global")
    assert topo["measured_steps"] == 8
    # median of PATTERN is 1.005; with the 5.0 s warm-up step it would be 1.01
    assert topo["step_time_s"] == pytest.approx(1.005)
    assert topo["forward_s"] == pytest.approx(0.3 * 1.005)
    assert topo["idle_s"] == pytest.approx(0.2 * 1.005)
    assert topo["bytes_sent"] == 2000  # summed over the two ranks
    assert topo["peak_memory_bytes"] == 2 << 20
    dfs = _row(results, order="dfs-pre", placer="contiguous")
    assert dfs["step_time_s"] == pytest.approx(0.8 * 1.005)


def test_derived_metrics(results):
    topo = _row(results, order="topo", placer="contiguous", strategy="global")
    assert topo["utilisation"] == pytest.approx(0.8)
    assert topo["idle_fraction"] == pytest.approx(0.2)
    assert topo["sim_error"] == pytest.approx(1.1 / 1.005 - 1)
    assert topo["pred_idle_fraction"] == pytest.approx(0.25)
    local = _row(results, strategy="local", status="ok")
    assert local["utilisation"] == pytest.approx(0.95)
    assert local["idle_fraction"] == pytest.approx(0.05)


def test_final_values_are_the_last_measured_step(results):
    topo = _row(results, order="topo", placer="contiguous", strategy="global")
    assert topo["final_step"] == 8
    assert topo["final_loss"] == pytest.approx(2.0 - 0.1 * 8)
    assert topo["final_accuracy"] == pytest.approx(0.8)
    assert topo["eval_accuracy"] == pytest.approx(0.85)
    assert math.isnan(_row(results, order="bfs", model="resnet20")["eval_accuracy"])
    assert topo["samples_per_s"] == pytest.approx(8 * 32 / sum(PATTERN))


def test_graph_and_prediction_columns(results):
    gpt = _row(results, model="gpt-small")
    assert gpt["node_count"] == 40 and gpt["max_width"] == 4
    assert gpt["critical_path_cost_share"] == pytest.approx(0.8)
    assert gpt["pred_messages"] == "stage"
    skipped = _row(results, status="skipped")
    assert math.isnan(skipped["pred_step_time_s"]) and math.isnan(skipped["node_count"])


def test_failed_and_skipped_keep_their_reason_and_have_no_metrics(results):
    failed = _row(results, status="failed")
    assert failed["reason"] == "rank 1: out of memory"
    assert failed["measured_steps"] == 0 and math.isnan(failed["step_time_s"])
    assert failed["pred_step_time_s"] == pytest.approx(1.5)  # planning succeeded
    assert _row(results, status="skipped")["reason"] == "placement is not a stage chain"
    assert set(results.ok["status"]) == {"ok"} and len(results.ok) == 9


def test_steps_table_one_row_per_config_step_rank(results):
    s = results.steps
    assert len(s) == 9 * 9 * 2  # 9 ok configs x (1 warm-up + 8) steps x 2 ranks
    cid = resultfile.fixture_configs()[0].config_id()
    one = s[(s["config_id"] == cid) & (s["step"] == 3)]
    assert list(one["rank"]) == [0, 1]
    assert list(one["step_time_s"]) == pytest.approx([PATTERN[2]] * 2)
    assert list(one["loss"]) == pytest.approx([1.7, 1.7])
    for col in ("step_s", "forward_s", "backward_s", "aux_s", "optimizer_s", "comm_wait_s",
                "idle_s", "overhead_s", "bytes_sent", "peak_memory_bytes", "aux_loss"):
        assert col in s
    assert one["warmup"].tolist() == [False, False]
    assert s[(s["config_id"] == cid) & (s["step"] == 0)]["warmup"].all()
    # global strategy: no auxiliary heads, NaN kept as NaN
    assert s[s["config_id"] == cid]["aux_loss"].isna().all()


def test_curves_elapsed_time_is_cumulative_measured_time(results):
    c = results.curves
    cid = resultfile.fixture_configs()[0].config_id()
    one = c[c["config_id"] == cid].sort_values("step")
    assert math.isnan(one["elapsed_s"].iloc[0])  # warm-up
    assert one["elapsed_s"].iloc[1:].tolist() == pytest.approx(np.cumsum(PATTERN).tolist())


def test_rank_summary(results):
    r = results.rank_summary
    cid = resultfile.fixture_configs()[0].config_id()
    one = r[r["config_id"] == cid]
    assert list(one["rank"]) == [0, 1]
    assert list(one["peak_memory_bytes"]) == [1 << 20, 2 << 20]
    assert list(one["utilisation"]) == pytest.approx([0.8, 0.8])
    assert list(one["pred_busy_s"]) == pytest.approx([1.1 * 0.75] * 2)


def test_timeline_read_only_where_present(results):
    cid = resultfile.fixture_configs()[0].config_id()
    assert list(results.timelines) == [cid]
    t = results.timelines[cid]
    assert list(t["kind"]) == [e[1] for e in resultfile.TIMELINE]
    assert results.configs["has_timeline"].sum() == 1


def test_missing_index_is_reported(results):
    m = results.missing
    assert list(m["index"]) == [9]
    assert list(m["status"]) == ["missing"]


def test_wrong_version_is_refused(tmp_path):
    p = write_result_file(tmp_path / "v4.h5", [Cfg()], format_version=4)
    with pytest.raises(ResultFormatError, match="version 4 is not supported"):
        load_results([p])


def test_other_format_name_is_refused(tmp_path):
    p = write_result_file(tmp_path / "other.h5", [Cfg()], format_name="something-else")
    with pytest.raises(ResultFormatError, match="not an interplace result file"):
        load_results([p])
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f.create_dataset("x", data=[1, 2, 3])
    with pytest.raises(ResultFormatError, match="format_name is None"):
        load_results([plain])


def test_non_hdf5_and_missing_files_are_refused(tmp_path):
    text = tmp_path / "notes.h5"
    text.write_text("not hdf5\n")
    with pytest.raises(ResultFormatError, match="not an HDF5 file"):
        load_results([text])
    with pytest.raises(ResultFormatError, match="no such file"):
        load_results([tmp_path / "absent.h5"])


def test_inconsistent_shapes_are_corrupt(tmp_path):
    p = write_result_file(tmp_path / "bad.h5", [Cfg()])
    with h5py.File(p, "a") as f:
        g = f["configs"][Cfg().config_id()]["ranks"]
        del g["step_s"]
        g.create_dataset("step_s", data=np.zeros((9, 3)))
    with pytest.raises(ResultFormatError, match=r"ranks/step_s has shape \(9, 3\)"):
        load_results([p])


def test_empty_file(tmp_path):
    for name, kwargs in (("none.h5", {"with_configs_group": False}), ("empty.h5", {})):
        r = load_results([write_result_file(tmp_path / name, [], **kwargs)])
        assert r.configs.empty and r.ok.empty and r.missing.empty
        assert "no configurations" in " ".join(r.notes)


def test_the_same_id_in_two_files_is_two_runs(tmp_path, configs):
    a = write_result_file(tmp_path / "a.h5", configs[:3])
    b = write_result_file(tmp_path / "b.h5", configs[2:5])
    r = load_results([a, b])
    assert len(r.configs) == 6  # nothing dropped
    twice = configs[2].config_id()
    runs = r.configs[r.configs["config_id"] == twice]
    assert sorted(runs["run_id"]) == [f"{twice}#0", f"{twice}#1"]
    assert set(runs["config_key"]) == {twice} and set(runs["file"]) == {str(a), str(b)}
    assert r.runs_per_configuration()[twice] == 2
    assert r.configs["run_id"].is_unique
    assert any("2 times" in n and "one run" in n for n in r.notes)
    assert len(r.measured_step_times(f"{twice}#1")) == 8


def test_repeat_attribute_makes_runs_of_one_configuration(tmp_path):
    from resultfile import repeated
    runs = repeated(Cfg(), 3, seed=1)
    r = load_results([write_result_file(tmp_path / "r.h5", runs)])
    assert sorted(r.configs["repeat"]) == [0, 1, 2]
    assert r.configs["config_id"].nunique() == 3  # the id includes the repeat, as in C++
    assert r.configs["config_key"].nunique() == 1  # ... but they are one configuration
    assert r.configs["run_id"].tolist() == r.configs["config_id"].tolist()
    assert r.runs_per_configuration().tolist() == [3]


def test_groups_sharing_an_id_in_one_file_are_runs(tmp_path):
    from resultfile import repeated
    runs = repeated(Cfg(), 3, seed=1, repeat_attr=False)
    r = load_results([write_result_file(tmp_path / "r.h5", runs)])
    assert r.configs["config_id"].nunique() == 1 and r.configs["run_id"].nunique() == 3
    assert (r.configs["repeat"] == 0).all()  # no attribute: repeat 0
    assert r.runs_per_configuration().tolist() == [3]


def test_config_key_is_the_id_of_repeat_0_by_the_canonical_string():
    """The C++ test ConfigId.IsFnv1a64OfTheCanonicalParameters's default TrainConfig."""
    from interplace_analysis.loader import config_key
    attrs = dict(model="resnet20", order="topo", placer="contiguous", devices=1,
                 strategy="global", pipeline="gpipe", interlock_mode="single",
                 micro_batches=1, batch_size=32, warmup_steps=1, steps=10,
                 dataset="synthetic", eval_samples_requested=0, optimizer="sgd",
                 learning_rate=0.05, weight_decay=0.0, seed=1, device="cpu",
                 cost_device="cpu-core", model_options="", data_dir="", repeat=2, id="x")
    text = ("model=resnet20\norder=topo\nplacer=contiguous\ndevices=1\nstrategy=global\n"
            "pipeline=gpipe\ninterlock_mode=single\nmicro_batches=1\nbatch_size=32\n"
            "warmup_steps=1\nsteps=10\ndataset=synthetic\neval_samples_requested=0\n"
            "optimizer=sgd\nlearning_rate=0.050000000000000003\nweight_decay=0\nseed=1\n"
            "device=cpu\ncost_device=cpu-core\nmodel_options=\ndata_dir=\nrepeat=0\n")
    assert config_key(attrs) == resultfile.fnv1a64(text)
    assert config_key({**attrs, "repeat": 0}) == config_key(attrs)
    assert config_key({**attrs, "seed": 2}) != config_key(attrs)
    assert config_key({"id": "abc"}) == "abc"  # no repeat attribute: the id


def test_diverged_is_not_a_measurement(tmp_path):
    c = Cfg(status="diverged", reason="loss is NaN at step 3")
    r = load_results([write_result_file(tmp_path / "d.h5", [c, Cfg(order="bfs", index=1)])])
    assert list(r.ok["order"]) == ["bfs"]
    from interplace_analysis.tables import failures
    f = failures.failure_table(r)
    assert list(f["status"]) == ["diverged"]


def test_incomplete_shards_do_not_claim_missing(tmp_path, configs):
    for c in configs:
        c.index *= 2  # shard 0/2 holds the even indices
    p = write_result_file(tmp_path / "s0.h5", configs, shard="0/2")
    r = load_results([p])
    assert r.missing.empty
    assert any("only shards" in n for n in r.notes)


def test_elapsed_time_is_when_the_last_rank_finished(tmp_path):
    """Ranks slowest on alternate steps: the step time (max) sums to 12 s over four
    steps, but each rank's own steps take 8 s, and so does the run."""
    cfg = Cfg(step_times=[3.0, 3.0, 3.0, 3.0])
    p = write_result_file(tmp_path / "skew.h5", [cfg])
    with h5py.File(p, "a") as f:
        g = f["configs"][cfg.config_id()]["ranks"]
        del g["step_s"]
        g.create_dataset("step_s", data=np.array([[5.0, 5.0], [1, 3], [3, 1], [1, 3], [3, 1]]))
    c = load_results([p]).curves
    assert c["elapsed_s"].iloc[1:].tolist() == [3.0, 4.0, 7.0, 8.0]


def test_ok_configuration_without_steps_is_listed(tmp_path):
    from interplace_analysis.tables.failures import failure_table
    p = write_result_file(tmp_path / "nodata.h5", [Cfg(with_data=False)])
    r = load_results([p])
    assert r.ok.empty
    t = failure_table(r)
    assert t["status"].tolist() == ["ok"] and "no measured step times" in t["reason"].iloc[0]


def test_attributes_written_as_one_element_arrays_read_as_scalars(tmp_path):
    p = write_result_file(tmp_path / "arr.h5", [Cfg()])
    with h5py.File(p, "a") as f:
        f.attrs["format_version"] = np.array([1], dtype=np.int64)
        f["configs"][Cfg().config_id()].attrs["devices"] = np.array([2], dtype=np.int64)
    r = load_results([p])
    assert r.configs["devices"].tolist() == [2]


def test_nan_step_times_are_not_results(tmp_path):
    from interplace_analysis.tables.failures import failure_table
    from interplace_analysis.tables.traversal import order_table
    p = write_result_file(tmp_path / "nan.h5", [Cfg(step_times=[float("nan")] * 3),
                                                Cfg(order="bfs", index=1)])
    r = load_results([p])
    assert r.ok["order"].tolist() == ["bfs"]
    assert failure_table(r)["status"].tolist() == ["ok"]
    assert order_table(r)["order"].tolist() == ["bfs"]


def test_the_same_path_twice_is_read_once(tmp_path, configs):
    a = write_result_file(tmp_path / "a.h5", configs[:3])
    r = load_results([a, tmp_path / "." / "a.h5"])
    assert len(r.configs) == 3 and r.configs["run_id"].is_unique
    assert any("given twice" in n for n in r.notes)


def test_e2e_is_its_own_global_label():
    from interplace_analysis.frames import is_global_label, strategy_label

    assert strategy_label("global", "e2e", "single") == "e2e"
    assert strategy_label("global", "gpipe", "single") == "global/gpipe"
    assert strategy_label("global", "interleaved-1f1b", "single", 2) == \
        "global/interleaved-1f1b/v2"
    assert strategy_label("global", "interleaved-1f1b", "single", 1) == \
        "global/interleaved-1f1b"
    assert strategy_label("local", "interleaved-1f1b", "single", 2) == "local"
    assert strategy_label("local", "e2e", "single") == "local"  # the pipeline is global's
    assert is_global_label("e2e") and is_global_label("global/1f1b")
    assert not is_global_label("pairwise")


def test_config_key_counts_the_recipe_only_where_it_is_not_the_default():
    from interplace_analysis.loader import config_key

    base = {"model": "resnet20", "learning_rate": 0.05, "weight_decay": 0.0, "repeat": 1}
    defaults = {**base, "lr_schedule": "constant", "lr_milestones": "",
                "lr_milestone_unit": "steps", "lr_decay": 0.1, "warmup_lr_steps": 0,
                "epochs": 0.0, "eval_epochs": "", "augmentation": "none"}
    # Files written before the recipe existed and files with the default recipe agree.
    assert config_key(base) == config_key(defaults)
    keys = {config_key(defaults)}
    for change in ({"lr_schedule": "cosine"}, {"warmup_lr_steps": 5}, {"epochs": 2.0},
                   {"eval_epochs": "1,2"}, {"augmentation": "crop-flip"},
                   {"lr_schedule": "step", "lr_milestones": "3"},
                   {"lr_schedule": "step", "lr_milestones": "3", "lr_decay": 0.5},
                   {"aux_head_capped": 1}, {"weight_decay_all": 1}):
        keys.add(config_key({**defaults, **change}))
    assert len(keys) == 10  # every recipe is its own configuration
