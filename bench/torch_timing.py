"""The timing loop of the PyTorch peers (resnet20_torch.py, gpt_torch.py), so that every
peer is measured the same way: 2 warm-up steps, then `repetitions` means over
`iterations` steps each, synchronised with the GPU before a clock is read."""

import time

import torch


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def device_name(device):
    return torch.cuda.get_device_name() if device.type == "cuda" else "cpu"


def time_steps(step, device, repetitions, iterations, warmup=2):
    """Seconds per call of step(), one mean per repetition."""
    for _ in range(warmup):
        step()
    if device.type == "cuda":
        # One step in the NVTX range a kernel profiler can select (ncu --nvtx
        # --nvtx-include profiled_step), as bench_train_gpu marks one of its steps; a
        # start/end range, which spans threads, as the backward runs on autograd's own.
        range_id = torch.cuda.nvtx.range_start("profiled_step")
        step()
        synchronize(device)
        torch.cuda.nvtx.range_end(range_id)
    synchronize(device)
    means = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(iterations):
            step()
        synchronize(device)
        means.append((time.perf_counter() - start) / iterations)
    return means
