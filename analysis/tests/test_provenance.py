"""The report's provenance header and its section layout."""

from __future__ import annotations

import re

from resultfile import Cfg, fixture_configs, write_result_file

from interplace_analysis.cli import main

ROOT = {"git_commit": "0123456789abcdef0123456789abcdef01234567",
        "mpi_version": "Open MPI v4.1.4", "hdf5_version": "1.10.8", "onednn_version": "2.6.3",
        "cuda_runtime_version": "12.4", "cuda_driver_version": "12.6", "cudnn_version": "9.1",
        "slurm_job_id": "4242", "devices": "NVIDIA H200,NVIDIA H200"}
SPEC = "[sweep]\nname = 'fixture'\nmodels = [\"resnet20\"]\n"


def _report(tmp_path, files, *extra):
    out = tmp_path / "rep"
    assert main(["report", *map(str, files), "--out", str(out), "--quiet", *extra]) == 0
    return out, (out / "report.md").read_text()


def test_header_carries_commit_versions_dates_spec_and_command(tmp_path):
    f = write_result_file(tmp_path / "a.h5", [Cfg()], root=ROOT, spec_text=SPEC)
    out, text = _report(tmp_path, [f], "--seed", "3")
    head = text.split("## Notes")[0]
    assert "- commit: `0123456789abcdef0123456789abcdef01234567`" in head
    for line in ("- MPI: `Open MPI v4.1.4`", "- HDF5: `1.10.8`", "- oneDNN: `2.6.3`",
                 "- CUDA runtime / driver: `12.4 / 12.6`", "- cuDNN: `9.1`",
                 "- Slurm job / array job / array task: `4242 /  / `",
                 "- devices: `NVIDIA H200,NVIDIA H200`", "- world size (MPI ranks): `2`",
                 "- file created (UTC): `2026-11-29T19:00:00Z`",
                 "- configurations started (UTC, first - last):"
                 " `2026-11-29T19:00:00Z - 2026-11-29T19:00:00Z`",
                 "- spec path: `runs/configs/fixture.toml`", "- hosts: `node1,node1`"):
        assert line in head, line
    assert "<details><summary>spec text (3 lines)</summary>" in head
    assert "```toml\n" + SPEC.rstrip("\n") + "\n```" in head
    assert (f"```sh\npython -m interplace_analysis report {f} --out {out} --quiet --seed 3\n```"
            in head)


def test_files_that_differ_say_so_per_file(tmp_path):
    a = write_result_file(tmp_path / "a.h5", [Cfg(index=0)], root=ROOT, spec_text=SPEC)
    b = write_result_file(tmp_path / "b.h5", [Cfg(order="bfs", index=0)],
                          root={**ROOT, "git_commit": "f" * 40})
    _, text = _report(tmp_path, [a, b])
    head = text.split("## Notes")[0]
    assert (f"- commit: **differs between files**: a.h5: `{ROOT['git_commit']}`;"
            f" b.h5: `{'f' * 40}`") in head
    assert "- MPI: `Open MPI v4.1.4`" in head  # the same in both: one value
    assert "spec text of a.h5" in head and "spec text of b.h5" in head


def test_sections_numbered_in_order_and_every_plot_embedded_once(tmp_path):
    f = write_result_file(tmp_path / "f.h5", fixture_configs())
    out, text = _report(tmp_path, [f])
    heads = re.findall(r"^##+ .*$", text, flags=re.M)
    top = [h for h in heads if h.startswith("## ")]
    assert top == ["## Provenance", "## Notes", "## 1. Recommendations", "## 2. Tables",
                   "## 3. Figures"]
    assert heads[heads.index("## 1. Recommendations") + 1] == "### 1.1 Recommendations per family"
    subs = [h for h in heads if h.startswith("### 2.")]
    assert subs[0] == "### 2.1 Configurations"
    assert [h.split(" ", 2)[1] for h in subs] == [f"2.{i}" for i in range(1, len(subs) + 1)]
    figs = [h for h in heads if h.startswith("### 3.")]
    assert [h.split(" ", 2)[2] for h in figs] == [
        "Step time by traversal order", "Speedup vs device count",
        "Simulator: predicted vs measured step time", "Throughput vs accuracy per strategy",
        "Accuracy vs wall time per strategy", "Loss curves per strategy",
        "Timelines: one placement under each strategy", "Timelines: measured and simulated"]
    pngs = sorted(p.name for p in (out / "plots").glob("*.png"))
    embedded = re.findall(r"!\[[^\]]*\]\(plots/([^)]+)\)", text)
    assert sorted(embedded) == pngs
    section = text.split("### 3.3 ")[1].split("### 3.4 ")[0]
    assert "(plots/predicted_vs_measured.png)" in section
    section = text.split("### 3.2 ")[1].split("### 3.3 ")[0]
    assert "(none: no setting ran on two or more device counts)" in section
