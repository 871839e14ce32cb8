"""Transformers written in plain PyTorch, the way users write them, for the examples and the
torch runtime's tests (`python3 -m interplace_importers module
interplace_importers.example_nets:gpt2_tiny --input-shape 32 --input-dtype int64`).

Neither uses interplace's ops on purpose: they import as torch ops (some opaque) and train
through the PyTorch runtime (runtime = "torch")."""

import math

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, context):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("mask", torch.tril(torch.ones(context, context, dtype=torch.bool)),
                             persistent=False)

    def forward(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.reshape(n, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
        y = scores.softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(n, t, d))


class Block(nn.Module):
    """GPT-2's pre-norm block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, dim, heads, context):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, context)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """Token and position embeddings, `layers` blocks, a final LayerNorm and an untied head:
    token ids [T] -> logits [T, vocabulary]."""

    def __init__(self, vocabulary=256, context=32, dim=64, heads=4, layers=4):
        super().__init__()
        self.wte = nn.Embedding(vocabulary, dim)
        self.wpe = nn.Embedding(context, dim)
        self.h = nn.ModuleList(Block(dim, heads, context) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocabulary, bias=False)

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def gpt2_tiny():
    """4 blocks of width 64 over 256 byte tokens, context 32 (~0.23 M parameters)."""
    return GPT2()


def gpt2_small_blocks():
    """8 blocks of width 128, context 64 (~1.7 M parameters): a decoder that takes a few
    milliseconds a micro-batch on one core."""
    return GPT2(vocabulary=256, context=64, dim=128, heads=4, layers=8)


def gpt2_medium():
    """GPT-2 medium's shape (24 blocks of width 1024, 16 heads, context 1024, the 50,257-token
    vocabulary; the head untied from the embedding: 406 M parameters): for simulated
    studies at cluster scale, too large to train on a few cores."""
    return GPT2(vocabulary=50257, context=1024, dim=1024, heads=16, layers=24)


def vit_b_16_cifar():
    """torchvision's VisionTransformer with vit_b_16's encoder (12 blocks of width 768, 12
    heads, MLP 3072; 85.8 M parameters) on 32x32 images in 8x8 patches (17 tokens), 10
    classes: vit_b_16 at a size one CPU core trains."""
    import torchvision
    return torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=12,
                                                num_heads=12, hidden_dim=768, mlp_dim=3072,
                                                num_classes=10)


def vit_ti_cifar():
    """torchvision's VisionTransformer at ViT-Ti's size (12 blocks of width 192, 3 heads,
    MLP 768; 5.4 M parameters) on 32x32 images in 8x8 patches (17 tokens), 10 classes."""
    import torchvision
    return torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=12,
                                                num_heads=3, hidden_dim=192, mlp_dim=768,
                                                num_classes=10)
