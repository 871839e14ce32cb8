"""``compare BASE NEW``: file pairs with several noisy runs per configuration and a known
change, written by resultfile.repeated."""

from __future__ import annotations

import json

import pytest
from resultfile import Cfg, repeated, write_result_file

from interplace_analysis import load_results, stats
from interplace_analysis.cli import main
from interplace_analysis.compare import compare_results, to_json, to_markdown_text, to_text

RUNS = 5


def _sweep(factor: float, seed: int, models=("resnet20", "gpt-small")) -> list[Cfg]:
    out = []
    for i, model in enumerate(models):
        fam = "gpt" if model.startswith("gpt") else "resnet"
        out += repeated(Cfg(model=model, family=fam, index=i), RUNS, seed + i, factor=factor)
    return out


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("compare")
    base = write_result_file(d / "base.h5", _sweep(1.0, 10))
    slow = write_result_file(d / "slow.h5", _sweep(1.2, 20))
    same = write_result_file(d / "same.h5", _sweep(1.0, 30))
    return base, slow, same


def test_a_20_percent_slowdown_is_slower_with_1_2_in_the_interval(pair):
    base, slow, _ = pair
    c = compare_results(load_results([base]), load_results([slow]))
    assert len(c.configs) == 2 and c.unmatched.empty
    for _, r in c.configs.iterrows():
        assert (r["runs_base"], r["runs_new"]) == (RUNS, RUNS)
        assert r["step_verdict"] == "slower" and r["throughput_verdict"] == "slower"
        assert r["step_ci_low"] <= 1.2 <= r["step_ci_high"]
        assert r["step_ci_low"] > 1.0 and r["method"] == "runs"
        assert r["throughput_ci_low"] <= 1 / 1.2 <= r["throughput_ci_high"]
    fam = c.families.set_index("model")
    assert set(fam["step_verdict"]) == {"slower"}
    assert all(fam["step_ci_low"] <= 1.2) and all(fam["step_ci_high"] >= 1.2)


def test_identical_files_are_the_same(pair):
    base, _, _ = pair
    c = compare_results(load_results([base]), load_results([base]))
    assert set(c.configs["step_verdict"]) == {"same"}
    assert set(c.configs["throughput_verdict"]) == {"same"}
    assert c.configs["step_ratio"].tolist() == pytest.approx([1.0, 1.0])


def test_two_sweeps_of_the_same_build_are_the_same(pair):
    base, _, same = pair
    c = compare_results(load_results([base]), load_results([same]))
    assert set(c.configs["step_verdict"]) == {"same"}


def test_one_run_per_configuration_gives_no_verdict(tmp_path):
    a = write_result_file(tmp_path / "a.h5", [Cfg()])
    b = write_result_file(tmp_path / "b.h5", [Cfg(scale=1.5)])
    c = compare_results(load_results([a]), load_results([b]))
    r = c.configs.iloc[0]
    assert r["step_ratio"] == pytest.approx(1.5)
    assert r["step_verdict"] == "not enough runs (n=1 vs 1: not enough repeats)"
    assert r["method"] == "within-run"
    assert any("fewer than 3 runs" in n for n in c.notes)


def test_configurations_in_one_file_only_are_listed(tmp_path):
    a = write_result_file(tmp_path / "a.h5", _sweep(1.0, 1))
    b = write_result_file(tmp_path / "b.h5", _sweep(1.0, 2, models=("resnet20",))
                          + [Cfg(model="vgg11", family="vgg", index=5)])
    c = compare_results(load_results([a]), load_results([b]), base_name="a", new_name="b")
    where = dict(zip(c.unmatched["name"].str.split().str[0], c.unmatched["where"]))
    assert where == {"gpt-small": "only in a", "vgg11": "only in b"}
    assert list(c.configs["model"]) == ["resnet20"]


def test_cli_text_json_md_and_out(pair, tmp_path, capsys):
    base, slow, _ = pair
    assert main(["compare", str(base), str(slow)]) == 0
    text = capsys.readouterr().out
    assert "slower" in text and "NEW / BASE" in text
    assert main(["compare", str(base), str(slow), "--format", "json",
                 "--out", str(tmp_path / "o")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["step_verdict"] for r in doc["configurations"]} == {"slower"}
    assert (tmp_path / "o" / "compare.md").is_file()
    assert (tmp_path / "o" / "tables" / "compare_configs.csv").is_file()
    assert main(["compare", str(base), str(slow), "--format", "md"]) == 0
    assert capsys.readouterr().out.startswith("# compare")
    assert main(["compare", str(base), str(tmp_path / "missing.h5")]) == 2
    assert main(["compare", str(base), str(slow), "--quiet", "--out", str(tmp_path / "q")]) == 0
    assert capsys.readouterr().out == "" and (tmp_path / "q" / "compare.md").is_file()
    assert main(["compare", str(base), str(slow), "--quiet"]) == 2
    assert "HINT: add --out DIR" in capsys.readouterr().err


ORDERS = ["topo", "dfs-pre", "bfs", "lexical", "dfs-post", "random"]


def _local_family(factor: float, seed: int) -> list[Cfg]:
    """One (model, strategy) family, resnet20/local, of six configurations with five
    runs each and tight intervals (1% between runs, 0.5% between steps)."""
    out = []
    for i, order in enumerate(ORDERS):
        out += repeated(Cfg(order=order, strategy="local", pipeline="", index=i), RUNS,
                        seed + i, factor=factor, run_sd=0.01, step_sd=0.005)
    return out


@pytest.fixture(scope="module")
def drift(tmp_path_factory):
    d = tmp_path_factory.mktemp("drift")
    base = load_results([write_result_file(d / "base.h5", _local_family(1.0, 100))])
    return {f: (base, load_results([write_result_file(d / f"new{f}.h5",
                                                      _local_family(f, 200))]))
            for f in (0.99, 0.9)}


def test_a_1_percent_drift_between_two_sweeps_is_no_verdict(drift):
    """The A/A case of issue #33: two sweeps of one build, every configuration the same,
    the family 1% faster with a tight interval and a tiny Holm p. Significant, and
    without a minimum effect a verdict (``faster``); with it ``same``, the 1% kept in
    brackets."""
    c = compare_results(*drift[0.99])
    fam = c.families.iloc[0]
    assert (fam["model"], fam["strategy_label"], fam["configurations"]) == (
        "resnet20", "local", 6)
    assert fam["step_ci_low"] > 1 / 1.05 and fam["step_ci_high"] < 1.0
    assert fam["step_p_holm"] < 0.01
    assert fam["step_verdict"] == fam["throughput_verdict"] == "same (faster, within 5%)"
    for col in ("step_verdict", "throughput_verdict"):
        assert all(v.startswith("same") for v in c.configs[col]), c.configs[col]
    old = compare_results(*drift[0.99], min_effect=0.0)
    assert old.families.iloc[0]["step_verdict"] == "faster"


def test_a_10_percent_change_is_faster(drift):
    c = compare_results(*drift[0.9])
    fam = c.families.iloc[0]
    assert fam["step_verdict"] == fam["throughput_verdict"] == "faster"
    assert fam["step_ci_low"] <= 0.9 <= fam["step_ci_high"] < 1 / 1.05
    assert set(c.configs["step_verdict"]) == set(c.configs["throughput_verdict"]) == {"faster"}


def test_compare_states_its_minimum_effect(drift, tmp_path, capsys):
    c = compare_results(*drift[0.99], min_effect=0.02)
    assert c.min_effect == 0.02
    assert c.families.iloc[0]["step_verdict"] == "same (faster, not shown beyond 2%)"
    doc = json.loads(to_json(c))
    assert doc["min_effect"] == 0.02 and doc["band"] == pytest.approx([1 / 1.02, 1.02])
    for text in (to_text(c), to_markdown_text(c)):
        assert "minimum effect 2%" in text and "[0.9804, 1.02]" in text


def test_cli_min_effect(pair, capsys):
    base, slow, _ = pair
    assert main(["compare", str(base), str(slow), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["min_effect"] == stats.MIN_EFFECT
    # a 20% slowdown is no change worth naming when only 25% would be
    assert main(["compare", str(base), str(slow), "--format", "json",
                 "--min-effect", "0.25"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["min_effect"] == 0.25
    assert {r["step_verdict"].split(",")[0] for r in doc["configurations"]} == {
        "same (slower"}
    with pytest.raises(SystemExit) as exit_:
        main(["compare", str(base), str(slow), "--min-effect", "-0.1"])
    assert exit_.value.code == 2
    assert "--min-effect: must be >= 0" in capsys.readouterr().err
    for command in ("compare", "report"):
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0
        assert "(default 0.05 = 5%; 0: the interval need only exclude 1)" in " ".join(
            capsys.readouterr().out.split())
