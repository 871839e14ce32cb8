#!/usr/bin/env python3
"""The peer for bench_resnet20 (CPU) and bench_train_gpu (--device cuda): the same resnet20
training step in PyTorch eager mode.

Same network (CIFAR ResNet, 16/32/64 channels, 3 basic blocks per stage, 1x1 conv + BN
projection shortcuts, 1x28x28 input, 10 classes), batch 128, cross-entropy, SGD with
momentum 0.9 and weight decay 5e-4. Prints one JSON object: median step time over
--repetitions means of --iterations steps, after 2 warm-up steps (as the C++ benchmarks).
On the GPU, TF32 is off (as interplace's default), cuDNN picks algorithms by timing them
(as interplace's cudnnFind), and every timed stretch ends with a synchronisation.
"""
import argparse
import json
import statistics

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_timing import device_name, time_steps


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.shortcut is None else self.shortcut(x)))


class CifarResNet(nn.Module):
    def __init__(self, blocks=3, in_channels=1, classes=10):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 16, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for cout in (16, 32, 64):
            for b in range(blocks):
                stride = 2 if b == 0 and cout != 16 else 1
                layers.append(BasicBlock(cin, cout, stride))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.layers(F.relu(self.bn(self.conv(x))))
        return self.fc(x.mean((2, 3)))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--threads", type=int, help="CPU threads (required on the CPU)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    if args.device == "cpu" and args.threads is None:
        parser.error("--threads is required with --device cpu")

    torch.manual_seed(42)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    model = CifarResNet().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    images = torch.randn(args.batch, 1, 28, 28).to(device)
    labels = (torch.arange(args.batch) % 10).to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(images), labels).backward()
        opt.step()

    means = time_steps(step, device, args.repetitions, args.iterations)
    print(json.dumps({
        "framework": f"pytorch {torch.__version__}",
        "device": device_name(device),
        "threads": torch.get_num_threads(),
        "batch": args.batch,
        "params": sum(p.numel() for p in model.parameters()),
        "step_s_median": statistics.median(means),
        "step_s_repetitions": means,
    }))


if __name__ == "__main__":
    main()
