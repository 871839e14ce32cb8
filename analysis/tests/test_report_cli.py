"""The report command end to end: files written, exit codes, odd inputs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from resultfile import Cfg, write_result_file

from interplace_analysis import load_results
from interplace_analysis.cli import main
from interplace_analysis.render import Table, to_latex, to_markdown
from interplace_analysis.report import build_report
from interplace_analysis.tables import traversal

TABLES = ["summary", "recommendations", "traversal_best", "traversal_orders", "strategies",
          "efficiency", "scaling", "graph_features", "simulator", "simulator_summary",
          "failures"]
ANALYSIS = Path(__file__).resolve().parents[1]


def _run_module(*args):
    """``python -m interplace_analysis`` in a child, finding the package either way."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ANALYSIS), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "interplace_analysis", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_report_writes_tables_plots_and_prints_markdown(fixture_file, tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", str(fixture_file), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "### 1.1 Recommendations per family" in printed
    assert "| resnet | dfs-pre | contiguous |" in printed
    assert (out / "report.md").read_text() + "\n" == printed
    for name in TABLES:
        for ext in ("md", "csv", "tex"):
            assert (out / "tables" / f"{name}.{ext}").is_file(), (name, ext)
    pngs = sorted(p.name for p in (out / "plots").glob("*.png"))
    # 2 step-time-by-order (resnet20, gpt-small), predicted vs measured, throughput vs
    # accuracy, accuracy vs time, loss and timeline of the resnet20 strategy group
    assert len(pngs) == 7
    assert "predicted_vs_measured.png" in pngs
    assert any(p.startswith("timeline_resnet20-topo-contiguous-K-2") for p in pngs)
    for p in (out / "plots").glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the CSV holds the same numbers as the table, at full precision
    csv = pd.read_csv(out / "tables" / "traversal_orders.csv")
    want = traversal.order_table(load_results([fixture_file]))
    assert csv["speedup_vs_topo"].tolist() == pytest.approx(want["speedup_vs_topo"].tolist(),
                                                            nan_ok=True)


def test_bad_inputs_exit_2_with_one_line(tmp_path):
    bad_version = write_result_file(tmp_path / "v9.h5", [Cfg()], format_version=9)
    text = tmp_path / "x.h5"
    text.write_text("hello")
    for path, words in ((bad_version, "version 9 is not supported"), (text, "not an HDF5 file"),
                        (tmp_path / "none.h5", "no such file")):
        r = _run_module("report", path, "--out", tmp_path / "o")
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr
        assert r.stderr.strip().count("\n") == 0 and words in r.stderr
    assert not (tmp_path / "o").exists()


def test_empty_file_gives_a_report_that_says_so(tmp_path, capsys):
    p = write_result_file(tmp_path / "e.h5", [])
    assert main(["report", str(p), "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    assert "the files hold no configurations" in text
    assert "(no successful configurations)" in text
    assert not list((tmp_path / "o" / "plots").glob("*.png"))


def test_all_failed_file_lists_every_configuration(tmp_path, capsys):
    cs = [Cfg(order="topo", status="failed", reason="boom", with_data=False, index=0),
          Cfg(order="bfs", status="skipped", reason="too big", with_data=False, index=1)]
    p = write_result_file(tmp_path / "f.h5", cs)
    assert main(["report", str(p), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    fails = pd.read_csv(tmp_path / "o" / "tables" / "failures.csv")
    assert fails["status"].tolist() == ["failed", "skipped"]
    assert fails["reason"].tolist() == ["boom", "too big"]
    assert pd.read_csv(tmp_path / "o" / "tables" / "recommendations.csv").empty


def test_diverged_configuration_is_counted_and_listed(tmp_path):
    # A non-finite loss ends a configuration as "diverged" (issue #16): the report must
    # accept the status, count it, and list it with the failures, not among the results.
    cs = [Cfg(order="topo", index=0),
          Cfg(order="bfs", status="diverged", reason="rank 1: diverged: loss nan",
              with_data=False, index=1)]
    p = write_result_file(tmp_path / "d.h5", cs)
    assert main(["report", str(p), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    fails = pd.read_csv(tmp_path / "o" / "tables" / "failures.csv")
    assert fails["status"].tolist() == ["diverged"]
    summary = pd.read_csv(tmp_path / "o" / "tables" / "summary.csv")
    assert summary["diverged"].tolist() == [1] and summary["ok"].tolist() == [1]


def test_single_order_without_topo_and_without_timeline(tmp_path):
    r = load_results([write_result_file(tmp_path / "s.h5", [Cfg(order="bfs")])])
    rep = build_report(r)
    assert any("no topo" in n for n in rep.notes)
    rec = rep.table("recommendations").iloc[0]
    assert rec["order"] == "bfs" and rec["confidence"].startswith("insufficient data")


def test_markdown_and_latex_escape_and_format():
    t = Table("t", "A_b", pd.DataFrame({"name": ["a|b", "x_y%"], "v": [0.123456, float("nan")]}))
    md = to_markdown(t)
    assert "| a\\|b | 0.1235 |" in md and "| x_y% | n/a |" in md
    tex = to_latex(t)
    assert r"x\_y\% & n/a \\" in tex and r"\begin{tabular}{ll}" in tex
    assert "(none)" in to_markdown(Table("e", "E", pd.DataFrame()))


def test_one_run_per_configuration_says_low_confidence(fixture_file, tmp_path, capsys):
    assert main(["report", str(fixture_file), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert "LOW CONFIDENCE: 9 of 9 configurations have fewer than 3 runs (fewest: n=1)" in text
    rec = build_report(load_results([fixture_file])).table("recommendations")
    assert all(c.startswith(("low", "insufficient")) for c in rec["confidence"])
    assert "high" not in " ".join(rec["confidence"])


def _demo_like(tmp_path, runs):
    """The demo's gpt case: local looks faster, every run sits at the same (majority
    class) accuracy; resnet: dfs-pre 30% faster than topo and bfs 10% (dfs-pre beats bfs
    by 22%, beyond the 5% minimum effect even with 5 noisy runs)."""
    from resultfile import repeated
    cs = []
    specs = [dict(model="gpt-mini", family="gpt", order="topo", scale=1.0),
             dict(model="gpt-mini", family="gpt", order="topo", strategy="local", pipeline="",
                  scale=0.9),
             dict(order="topo", scale=1.0), dict(order="dfs-pre", scale=0.7),
             dict(order="bfs", scale=0.9)]
    for i, kw in enumerate(specs):
        base = Cfg(index=i, eval_accuracy=0.0964 if kw.get("family") == "gpt" else 0.8,
                   **kw)
        cs += repeated(base, runs, seed=i) if runs > 1 else [base]
    return load_results([write_result_file(tmp_path / f"demo{runs}.h5", cs)])


def test_identical_accuracies_refuse_the_accuracy_cost(tmp_path):
    rep = build_report(_demo_like(tmp_path, 1))
    strat = rep.table("strategies")
    gpt = strat[strat["family"] == "gpt"]
    assert set(gpt["accuracy_verdict"]) == {
        "refused: identical across strategies (0.0964: majority class?)"}
    rec = rep.table("recommendations").set_index("family").loc["gpt"]
    assert rec["strategy"] == "global/gpipe"  # not local "at accuracy cost +0.000"
    assert "accuracy cost refused (identical across strategies" in rec["strategy_evidence"]


def test_repeats_give_verdicts_and_confidence(tmp_path):
    rep = build_report(_demo_like(tmp_path, 5))
    best = rep.table("traversal_best")
    row = best[(best["model"] == "resnet20")].iloc[0]
    assert row["best_order"] == "dfs-pre" and row["verdict"] == "beats runner-up"
    rec = rep.table("recommendations").set_index("family").loc["resnet"]
    assert rec["order"] == "dfs-pre" and rec["runs"] == 5
    assert rec["confidence"] == "high: faster than the runner-up and topo beyond noise and 5%"
    summary = rep.table("summary").iloc[0]
    assert (summary["configurations"], summary["runs"]) == (5, 25)
    assert not any("LOW CONFIDENCE" in n for n in rep.notes)
    strat = rep.table("strategies")
    local = strat[(strat["family"] == "gpt") & (strat["strategy_label"] == "local")].iloc[0]
    assert local["runs"] == 5 and local["speedup_verdict"] == "faster"
    assert local["speedup_ci_low"] <= 1 / 0.9 <= local["speedup_ci_high"]


def test_every_verdict_of_the_report_uses_its_minimum_effect(tmp_path):
    """With --min-effect 0.3 the 12-38% gains of the demo-like sweep are significant
    but short of it: no table calls them, and each says what it saw."""
    rep = build_report(_demo_like(tmp_path, 5), min_effect=0.3)
    orders = rep.table("traversal_orders").set_index(["model", "order"])
    assert orders.loc[("resnet20", "bfs"), "verdict"] == "same (faster, within 30%)"
    best = rep.table("traversal_best")
    row = best[best["model"] == "resnet20"].iloc[0]
    assert row["verdict"] == ("tie with bfs (slower, not shown beyond 30%),"
                              " topo (slower, not shown beyond 30%)")
    rec = rep.table("recommendations").set_index("family").loc["resnet"]
    assert rec["confidence"] == "low: within noise or 30% of the runner-up and topo"
    strat = rep.table("strategies").set_index("strategy_label")
    assert strat.loc["local", "speedup_verdict"] == "same (faster, within 30%)"


def test_the_report_states_its_minimum_effect(fixture_file, tmp_path):
    assert "a minimum effect of 5% (--min-effect 0.05)" in build_report(
        load_results([fixture_file])).notes[0]
    out = tmp_path / "rep"
    assert main(["report", str(fixture_file), "--out", str(out), "--quiet",
                 "--min-effect", "0.1"]) == 0
    text = (out / "report.md").read_text()
    assert "the whole interval outside [0.9091, 1.1]: a minimum effect of 10%" in text
    assert " --quiet --min-effect 0.1\n```" in text  # the command, in the provenance
