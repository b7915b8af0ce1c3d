"""adrop's built-in small transformers, trainable on a CPU in minutes: plain nn.Modules of torch's own layers, which
a method trains as it trains a user's transformer (every weight, or attention by heads with structure=neuron).

    vit_tiny   a Vision Transformer: non-overlapping patches embedded by a convolution, a class token, a learned
               positional embedding, pre-norm torch TransformerEncoder layers, a head on the class token's state
               (MNIST, patch 7: 16 patches + 1 token)
    gpt_tiny   a GPT: token embedding, a learned positional embedding, causal pre-norm torch TransformerEncoder layers,
               a final LayerNorm and a head over the vocabulary (untied: adrop trains each weight as its own); returns
               batch x context x vocabulary logits (task=language_model)

Both take their positional embedding as a parameter added to the tokens (not an embedding of arange(t)), so that a
stack of configurations trains them as one.
"""

from __future__ import annotations

import torch
from torch import nn


def encoder(dim: int, heads: int, layers: int, mlp: int) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(
        dim, heads, mlp * dim, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


class ViTTiny(nn.Module):
    """A Vision Transformer for small images: input_shape (C, H, W), H and W multiples of `patch`."""

    def __init__(self, input_shape=(1, 28, 28), classes=10, patch=7, dim=64, heads=4, layers=2, mlp=2):
        super().__init__()
        channels, height, width = (int(s) for s in input_shape)
        if height % patch or width % patch:
            raise ValueError(f"vit_tiny: images of {height} x {width} do not split into patches of {patch} x {patch}")
        tokens = (height // patch) * (width // patch)
        self.patch = nn.Conv2d(channels, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(0.02 * torch.randn(1, tokens + 1, dim))
        self.encoder = encoder(dim, heads, layers, mlp)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)
        self.architecture = f"vit{channels}x{height}x{width}-p{patch}-d{dim}-h{heads}-l{layers}-{classes}"

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.encoder(x)[:, 0]))


class GPTTiny(nn.Module):
    """A causal language model over token ids, input_shape (context,), `classes` the vocabulary's size."""

    def __init__(self, input_shape=(64,), classes=256, dim=64, heads=4, layers=2, mlp=4):
        super().__init__()
        context = int(input_shape[-1])
        self.tok = nn.Embedding(classes, dim)
        self.pos = nn.Parameter(0.02 * torch.randn(1, context, dim))
        self.encoder = encoder(dim, heads, layers, mlp)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)
        self.architecture = f"gpt{context}-d{dim}-h{heads}-l{layers}-v{classes}"

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos[:, :t]
        causal = nn.Transformer.generate_square_subsequent_mask(t, device=idx.device)
        return self.head(self.norm(self.encoder(x, mask=causal, is_causal=True)))
