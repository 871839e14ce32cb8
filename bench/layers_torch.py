#!/usr/bin/env python3
"""The peer for bench_layers_gpu: the same layer cases (layer_cases.cpp; names must match,
compare_gpu.py pairs them by name) in PyTorch eager mode, forward and backward timed
separately, each iteration ending with a synchronisation as in the C++ benchmark.
Backward is timed alone: one forward, then backward repeatedly on the same graph.
TF32 off, cuDNN picking algorithms by timing them. Prints one JSON object.
"""
import argparse
import json
import re
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from gpt_torch import Attention


class TokenAndPosition(nn.Module):
    def __init__(self, vocab, positions, dim):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(positions, dim)

    def forward(self, ids):
        return self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))


class Lambda(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *xs):
        return self.f(*xs)


def normal(*shape):
    return ("normal", shape)


def integers(bound, *shape):
    return ("integers", bound, shape)


# name -> (module factory, inputs); as layer_cases.cpp.
CASES = {
    "conv3x3_16_28x28_b128": (lambda: nn.Conv2d(16, 16, 3, 1, 1, bias=False),
                              [normal(128, 16, 28, 28)]),
    "conv3x3_32_14x14_b128": (lambda: nn.Conv2d(32, 32, 3, 1, 1, bias=False),
                              [normal(128, 32, 14, 14)]),
    "conv3x3_64_7x7_b128": (lambda: nn.Conv2d(64, 64, 3, 1, 1, bias=False),
                            [normal(128, 64, 7, 7)]),
    "conv3x3_s2_16to32_b128": (lambda: nn.Conv2d(16, 32, 3, 2, 1, bias=False),
                               [normal(128, 16, 28, 28)]),
    "conv1x1_s2_16to32_b128": (lambda: nn.Conv2d(16, 32, 1, 2, 0, bias=False),
                               [normal(128, 16, 28, 28)]),
    "conv3x3_64_56x56_b16": (lambda: nn.Conv2d(64, 64, 3, 1, 1, bias=False),
                             [normal(16, 64, 56, 56)]),
    "dwconv3x3_144_56x56_b16": (lambda: nn.Conv2d(144, 144, 3, 1, 1, groups=144, bias=False),
                                [normal(16, 144, 56, 56)]),
    "batchnorm_16_28x28_b128": (lambda: nn.BatchNorm2d(16), [normal(128, 16, 28, 28)]),
    # resnet20's three stages at batch 512, where its training step is GPU-bound.
    "conv3x3_16_28x28_b512": (lambda: nn.Conv2d(16, 16, 3, 1, 1, bias=False),
                              [normal(512, 16, 28, 28)]),
    "conv3x3_32_14x14_b512": (lambda: nn.Conv2d(32, 32, 3, 1, 1, bias=False),
                              [normal(512, 32, 14, 14)]),
    "conv3x3_64_7x7_b512": (lambda: nn.Conv2d(64, 64, 3, 1, 1, bias=False),
                            [normal(512, 64, 7, 7)]),
    "batchnorm_16_28x28_b512": (lambda: nn.BatchNorm2d(16), [normal(512, 16, 28, 28)]),
    "relu_16_28x28_b128": (lambda: nn.ReLU(), [normal(128, 16, 28, 28)]),
    "maxpool3x3_s2_64_112x112_b8": (lambda: nn.MaxPool2d(3, 2, 1), [normal(8, 64, 112, 112)]),
    "globalavgpool_64_7x7_b128": (lambda: Lambda(lambda x: x.mean((2, 3))),
                                  [normal(128, 64, 7, 7)]),
    "linear_768to3072_1024rows": (lambda: nn.Linear(768, 3072), [normal(8, 128, 768)]),
    "gelu_3072_1024rows": (lambda: nn.GELU(approximate="tanh"), [normal(8, 128, 3072)]),
    "layernorm_768_1024rows": (lambda: nn.LayerNorm(768), [normal(8, 128, 768)]),
    "attention_768_h12_t128_b8": (lambda: Attention(768, 12), [normal(8, 128, 768)]),
    "embedding_50257x768_t128_b8": (lambda: TokenAndPosition(50257, 1024, 768),
                                    [integers(50257, 8, 128)]),
    "softmax_xent_50257_512rows": (lambda: Lambda(F.cross_entropy),
                                   [normal(512, 50257), integers(50257, 512)]),
}


def make_input(spec, device):
    if spec[0] == "normal":
        return torch.randn(*spec[1], device=device, requires_grad=True)
    return torch.randint(spec[1], spec[2], device=device)


def timed(fn, sync, min_time_s):
    """Seconds per call: calls fn (each followed by sync) until min_time_s has passed."""
    fn()
    sync()
    iterations, start = 0, time.perf_counter()
    while True:
        fn()
        sync()
        iterations += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time_s:
            return elapsed / iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu only to try the script")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per measurement")
    parser.add_argument("--filter", default="", help="regular expression on case names")
    args = parser.parse_args()

    torch.manual_seed(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    device = torch.device(args.device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    results = {}
    for name, (make, specs) in CASES.items():
        if not re.search(args.filter, name):
            continue
        module = make().to(device)
        inputs = [make_input(spec, device) for spec in specs]
        forward_s = timed(lambda: module(*inputs), sync, args.min_time)
        y = module(*inputs)
        dy = torch.randn_like(y)
        backward_s = timed(lambda: y.backward(dy, retain_graph=True), sync, args.min_time)
        results[name] = {"forward_s": forward_s, "backward_s": backward_s}
    print(json.dumps({
        "framework": f"pytorch {torch.__version__}",
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "cases": results,
    }))


if __name__ == "__main__":
    main()
