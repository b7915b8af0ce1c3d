"""Benchmark: a ViT without half its attention heads (adrop.heads.compact_heads) against the dense ViT, in
onnxruntime, at batch 1 and 64.

    python scripts/benchmarks/bench_compact_vit.py [--threads 1] [--rounds 7] [--calls 200] [--patch 4] [--units 0]

The ViT: MNIST-sized inputs (1 x 28 x 28) in 49 patches of 4 x 4 and a class token (50 tokens; --patch 2: 196
patches and a class token, the 197 tokens of ViT-B/16 at 224 x 224), dim 64, 8 heads, 4 of torch's
TransformerEncoderLayer (feed-forward 128), a head of 10. Half the heads is half the attention's multiply-adds, not
half the layer's: at 50 tokens the layer's count falls to 0.71 of it (a bound of 1.41x), at 197 tokens to 0.64
(1.56x). Half of each attention's heads (4 of 8, chosen at random,
seeded) get zero v rows, as structure=neuron leaves a head it drops (adrop.methods.sparse_parameter); with
--units F, also the fraction F of each feed-forward block's hidden units (zero linear1 rows). Both models are exported
by torch.onnx and run by one onnxruntime session each, alternating: median seconds per `--calls` calls over
`--rounds` rounds after a warm-up; the ratio dense / compact per batch. Their logits agree to float32 rounding
(printed).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import torch
from torch import nn

from adrop.heads import compact_heads


class ViT(nn.Module):
    def __init__(self, dim=64, heads=8, layers=4, ff=128, patch=4, size=28, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(1, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(0.02 * torch.randn(1, (size // patch) ** 2 + 1, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.encoder(x)[:, 0]))


def pruned_vit(units: float, patch: int, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    model = ViT(patch=patch).eval()
    with torch.no_grad():
        for layer in model.encoder.layers:
            attn = layer.self_attn
            E, H = attn.embed_dim, attn.num_heads
            d = E // H
            for h in torch.randperm(H)[: H // 2].tolist():
                attn.in_proj_weight[2 * E + h * d : 2 * E + (h + 1) * d] = 0
            gone = torch.randperm(layer.linear1.out_features)[: int(units * layer.linear1.out_features)]
            layer.linear1.weight[gone] = 0
    return model


def session(model: nn.Module, threads: int):
    import onnxruntime as ort

    program = torch.onnx.export(
        model,
        (torch.zeros(2, 1, 28, 28),),
        input_names=["x"],
        output_names=["logits"],
        dynamic_shapes={"x": {0: torch.export.Dim("n")}},
        dynamo=True,
        verbose=False,
    )
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = threads
    return ort.InferenceSession(program.model_proto.SerializeToString(), options, providers=["CPUExecutionProvider"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--units", type=float, default=0.0, help="fraction of feed-forward units removed too")
    p.add_argument("--patch", type=int, default=4, help="patch side: 4 (50 tokens) or 2 (197 tokens)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    import warnings

    import onnxruntime as ort

    warnings.simplefilter("ignore")
    dense = pruned_vit(args.units, args.patch)
    small = compact_heads(dense)
    heads = [layer.self_attn.num_heads for layer in small.encoder.layers]
    units = [layer.linear1.out_features for layer in small.encoder.layers]
    sessions = {"dense": session(dense, args.threads), "compact": session(small, args.threads)}
    print(
        f"torch {torch.__version__}, onnxruntime {ort.__version__}, {platform.processor() or platform.machine()}, "
        f"{args.threads} thread(s); {(28 // args.patch) ** 2 + 1} tokens; heads kept per layer {heads} of 8, "
        f"feed-forward units {units} of 128"
    )
    for batch in (1, 64):
        x = np.random.default_rng(0).standard_normal((batch, 1, 28, 28)).astype(np.float32)
        outs = {name: s.run(None, {"x": x})[0] for name, s in sessions.items()}
        gap = float(np.abs(outs["dense"] - outs["compact"]).max())
        times = {name: [] for name in sessions}
        for _ in range(args.rounds):
            for name, s in sessions.items():
                t0 = time.perf_counter()
                for _ in range(args.calls):
                    s.run(None, {"x": x})
                times[name].append((time.perf_counter() - t0) / args.calls)
        med = {name: statistics.median(t) for name, t in times.items()}
        print(
            f"batch {batch:2d}: dense {med['dense'] * 1e3:.3f} ms, compact {med['compact'] * 1e3:.3f} ms, "
            f"dense / compact {med['dense'] / med['compact']:.2f}x; logits differ by at most {gap:.2e}"
        )


if __name__ == "__main__":
    main()
