"""The CUDA path against the CPU reference, run where there is a GPU (skipped elsewhere; scripts/tools/gpu_checks.sh
runs them on a lent GPU machine). Not bitwise (other kernels, other reduction orders): every method with its noise held
fixed ends where its CPU run ends as far as float32 rounding allows after the first steps (test_stacked.assert_follows),
a stack on the GPU follows its single GPU runs, and a conv net trains there."""

import numpy as np
import pytest
import torch

from adrop import methods

from helpers.engines import stack, train
from helpers.stacks import assert_follows, three

STEPS = 7  # an epoch of the synthetic data's 1,600 training examples at batch 256
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA on this machine")


@pytest.fixture(autouse=True)
def exact_matmul():
    """No TF32 (it would round products to 10 bits): what is compared is the kernels, not a lower precision."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def extra_for(method, pruned):
    return {
        "magnitude_pruning": ["method.params.final_sparsity=0.5", "method.params.frequency=2"],
        "fixed_mask": [f"init_from={pruned}"],
        "adaptive_dropout": ["method.params.mask=gaussian"],
    }.get(method, [])


@pytest.mark.parametrize("method", methods.names())
def test_each_method_on_cuda_follows_its_cpu_run(method, synthetic, held_noise, pruned, tmp_path):  # noqa: F811
    common = (f"method={method}", "epochs=1", "batch_size=256", *extra_for(method, pruned))
    cpu = train(synthetic(*common), tmp_path / "cpu")
    gpu = train(synthetic(*common, "device=cuda"), tmp_path / "gpu")
    assert gpu["status"] == "completed" and gpu["device"].startswith("cuda")
    a, b = np.load(tmp_path / "cpu" / "weights.npz"), np.load(tmp_path / "gpu" / "weights.npz")
    assert_follows(a, b, STEPS, longest_product=256, lr_sum=STEPS * cpu["lr"])
    assert abs(cpu["test_error"] - gpu["test_error"]) <= 2 / 500


@pytest.mark.parametrize("method", ["dense", "logsum", "vardrop_lr_ar", "hard_concrete"])
def test_a_stack_on_cuda_follows_its_single_cuda_runs(method, synthetic, held_noise, tmp_path):  # noqa: F811
    cfgs = three(synthetic, method, ["device=cuda"])
    for i, cfg in enumerate(cfgs):
        train(cfg, tmp_path / f"single{i}")
    stacked = stack(cfgs, [tmp_path / f"stack{i}" for i in range(3)]).fit()
    for i, cfg in enumerate(cfgs):
        a, b = np.load(tmp_path / f"single{i}" / "weights.npz"), np.load(tmp_path / f"stack{i}" / "weights.npz")
        assert stacked[i]["status"] == "completed"
        assert_follows(a, b, STEPS, longest_product=256, lr_sum=STEPS * cfg.lr)


def test_a_conv_net_trains_on_cuda(mnist, tmp_path):
    summary = train(mnist("model=conv_small", "method=vardrop_lr_ar", "epochs=1", "device=cuda"), tmp_path)
    assert summary["status"] == "completed" and summary["device"].startswith("cuda")
    assert all(np.isfinite(v).all() for v in np.load(tmp_path / "weights.npz").values())
