#!/usr/bin/env python3
"""The peer for bench_train_gpu's GPT step: the same network and step in PyTorch eager mode.

Token + position embedding, --layers pre-LayerNorm blocks (causal self-attention with a
fused qkv projection, MLP d -> 4d -> d with tanh GELU), final LayerNorm and an untied
linear head (gpt_model.hpp), cross-entropy over every position, AdamW (lr 3e-4, weight
decay 0.01 on weight matrices and embeddings only, as interplace). Attention is written
out (scores, causal mask, softmax, weighted sum) as interplace computes it, not through
fused flash kernels. TF32 off. Prints one JSON object: the median step time over
--repetitions means of --iterations steps after 2 warm-up steps, each timed stretch ending
with a synchronisation.
"""
import argparse
import json
import math
import statistics

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_timing import device_name, time_steps


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        weights = F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attention = Attention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, vocab, positions, dim, heads, layers):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(positions, dim)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tokens(ids) + self.positions(torch.arange(t, device=ids.device))
        return self.head(self.ln(self.blocks(x)))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--time", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu only to try the script on small sizes")
    args = parser.parse_args()

    torch.manual_seed(42)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    model = Gpt(args.vocab, args.time, args.dim, args.dim // 64, args.layers).to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=3e-4)
    ids = torch.randint(args.vocab, (args.batch, args.time), device=device)
    targets = torch.randint(args.vocab, (args.batch, args.time), device=device)

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(ids)
        F.cross_entropy(logits.view(-1, args.vocab), targets.view(-1)).backward()
        opt.step()

    means = time_steps(step, device, args.repetitions, args.iterations)
    print(json.dumps({
        "framework": f"pytorch {torch.__version__}",
        "device": device_name(device),
        "batch": args.batch,
        "time": args.time,
        "params": sum(p.numel() for p in model.parameters()),
        "step_s_median": statistics.median(means),
        "step_s_repetitions": means,
    }))


if __name__ == "__main__":
    main()
