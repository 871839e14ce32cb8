"""MFU (tables/efficiency.py) against hand-computed values, and n/a with a reason where
the peak or the FLOPs are unknown."""

from __future__ import annotations

import math

import pytest
from resultfile import Cfg, write_result_file

from interplace_analysis import load_results
from interplace_analysis.tables import efficiency


def _row(tmp_path, **kw):
    r = load_results([write_result_file(tmp_path / "e.h5", [Cfg(**kw)])])
    t = efficiency.efficiency_table(r)
    assert len(t) == 1
    return t.iloc[0]


def test_mfu_equals_the_hand_computed_value(tmp_path):
    # resnet20 K=2, M=4, B=32: the graph is one micro-batch of 8 samples with 1 GFLOP
    # forward and 2 GFLOP backward, so a step is (1 + 2) x 32 / 8 = 12 GFLOP; the median
    # step is 1.005 s, so each of the 2 ranks does 12e9 / 1.005 / 2 = 5.970 GFLOP/s;
    # cpu-core peak 128 GFLOP/s x 1 thread.
    row = _row(tmp_path)
    assert row["train_flops_per_step"] == pytest.approx(12e9)
    assert row["achieved_flops_per_rank"] == pytest.approx(12e9 / 1.005 / 2)
    assert row["peak_flops_per_rank"] == pytest.approx(128e9)
    assert row["mfu"] == pytest.approx(12e9 / 1.005 / 2 / 128e9)  # 0.04664
    assert row["mfu"] == pytest.approx(0.046642, abs=1e-6)
    assert row["mfu_ci_low"] <= row["mfu"] <= row["mfu_ci_high"]
    assert row["mfu_note"] == ""
    assert row["utilisation"] == pytest.approx(0.8)  # beside the utilisation
    assert row["runs"] == 1


def test_cpu_peak_scales_with_the_ranks_threads(tmp_path):
    row = _row(tmp_path, device_name="cpu: 4 threads")
    assert row["peak_flops_per_rank"] == pytest.approx(4 * 128e9)
    assert row["mfu"] == pytest.approx(12e9 / 1.005 / 2 / (4 * 128e9))


def _gpu(name: str, i: int = 0) -> str:
    """A rank's description as runtime/devices.cpp writes it (with commas inside)."""
    return (f"{name} (cuda:{i} of 2, 0000:19:00.0, sm_90, 132 SMs, 139.8 GiB, driver CUDA"
            " 12.6, runtime CUDA 12.4, cuDNN 9.1)")


def test_gpu_peak_only_when_the_gpu_is_the_preset(tmp_path):
    row = _row(tmp_path, device="cuda", cost_preset="h200", peak_flops=67e12,
               device_name=_gpu("NVIDIA H200"))
    assert row["peak_flops_per_rank"] == pytest.approx(67e12)
    assert row["mfu"] == pytest.approx(12e9 / 1.005 / 2 / 67e12)
    row = _row(tmp_path, device="cuda", cost_preset="h200", peak_flops=67e12,
               device_name=_gpu("NVIDIA A100-SXM4-80GB"))
    assert math.isnan(row["mfu"])
    assert row["mfu_note"] == ("n/a: the device 'NVIDIA A100-SXM4-80GB' is not the cost"
                               " device preset h200: its peak is unknown")
    row = _row(tmp_path, device="cuda", device_name=_gpu("NVIDIA H200"))
    assert row["mfu_note"] == "n/a: cuda run, but the cost device preset is cpu-core"
    row = _row(tmp_path, device="cuda", cost_preset="h200", peak_flops=67e12,
               device_name="NVIDIA H200")
    assert row["mfu_note"].startswith("n/a: cannot read 2 GPU names from")


def test_unknown_peak_or_flops_is_na_with_the_reason(tmp_path):
    row = _row(tmp_path, peak_flops=None)
    assert math.isnan(row["mfu"]) and math.isnan(row["peak_flops_per_rank"])
    assert row["mfu_note"].startswith("n/a: no peak_flops_per_s in the file")
    assert row["train_flops_per_step"] == pytest.approx(12e9)  # still known
    row = _row(tmp_path, flops=None)
    assert math.isnan(row["mfu"]) and math.isnan(row["train_flops_per_step"])
    assert row["mfu_note"].startswith("n/a: no FLOP counts in the file")
    row = _row(tmp_path, device_name="cpu with 4 cores")
    assert row["mfu_note"] == "n/a: cannot read the thread count from 'cpu with 4 cores'"


def test_formula_helpers():
    assert efficiency.training_flops_per_step(1.0, 2.0, 8, 32) == 12.0
    assert math.isnan(efficiency.training_flops_per_step(float("nan"), 2.0, 8, 32))
    assert efficiency.mfu(12.0, 2.0, 3, 1.0) == 2.0
