"""Your network and your data: any nn.Module by `_target_` (here tests/user_nets.py, a ResNet with BatchNorm), trained
by every method on scikit-learn's digits and on a .npz file, reloaded from weights.npz into a fresh instance of the
user's class with the reported error, stacked; and bad networks and bad data refused in one line at start."""

import csv
import json
import re

import numpy as np
import pytest
import torch
from hydra.utils import instantiate

from adrop import methods
from adrop.train.config.settings import resolve
from adrop.train.errors import TrainError

import user_nets
from helpers.engines import one, stack, train
from helpers.stacks import assert_follows

RESNET = ("dataset=digits", "model=custom", "model._target_=user_nets.TinyResNet")
LAYERS = ["stem.0", "blocks.0.conv1", "blocks.0.conv2", "head"]
PRUNING = ("method.params.final_sparsity=0.5", "method.params.frequency=2")


@pytest.fixture(scope="module")
def digits_npz(tmp_path_factory):
    """scikit-learn's digits as a user's .npz: uint8 images N x 1 x 8 x 8, a test part, no validation arrays."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = (bunch.images * 255 / 16).round().astype(np.uint8)[:, None]
    path = tmp_path_factory.mktemp("npz") / "digits.npz"
    np.savez(path, x_train=x[:1400], y_train=bunch.target[:1400], x_test=x[1400:], y_test=bunch.target[1400:])
    return path


def small(config, *overrides):
    return config(*overrides, "device=cpu", "progress=never", "epochs=2", "lr=1e-2", "batch_size=64")


def reloaded_error(folder, data, make=user_nets.TinyResNet) -> float:
    """The test error of a fresh instance of the user's class with weights.npz loaded (strictly: exactly its keys)."""
    net = make()
    with np.load(folder / "weights.npz") as arrays:
        net.load_state_dict({key: torch.from_numpy(arrays[key]) for key in arrays.files})
    net.eval()
    with torch.no_grad():
        logits = net(data.test.x.view(-1, *data.image))
    return (logits.argmax(1) != data.test.y).sum().item() / len(data.test)


@pytest.mark.parametrize("method", [m for m in methods.names() if m != "fixed_mask"])
def test_every_method_trains_a_users_resnet_and_weights_npz_reloads_into_the_users_class(method, config, tmp_path):
    run = one(small(config, *RESNET, f"method={method}", *(PRUNING if method == "magnitude_pruning" else ())), tmp_path)
    summary = run.fit()[0]
    assert summary["status"] == "completed" and list(summary["layers"]) == LAYERS
    assert summary["model"] == "custom" and summary["architecture"] == "user_nets.TinyResNet"
    assert reloaded_error(tmp_path, run.data) == summary["test_error"]
    last = [r for r in csv.DictReader((tmp_path / "layers.csv").open()) if r["epoch"] == "2"]
    assert [r["layer"] for r in last if r["trained"] == "method"] == LAYERS
    # the batch norms train densely: rows of their own, and counted in the whole network's totals
    dense = {r["layer"]: int(r["total"]) for r in last if r["trained"] == "dense"}
    assert dense and all(".bn" in name or name.startswith("stem.") for name in dense), dense
    params = summary["parameters"]
    assert params["dense_modules"] == dense and params["sparsified"] == summary["total"]
    rebuilt = instantiate(summary["model_arguments"])  # the class as adrop made it, from summary.json alone
    assert isinstance(rebuilt, user_nets.TinyResNet)
    every = sum(p.numel() for p in rebuilt.parameters())
    assert params["total"] == params["sparsified"] + params["dense"] == every
    # the cost is measured by running the network: a 3x3 conv on 8x8 inputs with padding 1 acts at 64 positions
    assert [summary["layers"][n]["dense_macs"] // summary["layers"][n]["total"] for n in LAYERS] == [64, 64, 64, 1]


def test_a_users_resnet_learns_and_its_batchnorm_statistics_travel_in_weights_npz(config, tmp_path):
    run = one(
        config(
            *RESNET,
            "method=logsum",
            "lam=0.02",
            "device=cpu",
            "progress=never",
            "epochs=12",
            "lr=1e-2",
            "batch_size=64",
        ),
        tmp_path,
    )
    summary = run.fit()[0]
    assert summary["test_error"] < 0.2 and summary["nonzero_fraction"] < 1  # 10 classes: a guess errs 0.9
    assert reloaded_error(tmp_path, run.data) == summary["test_error"]
    with np.load(tmp_path / "weights.npz") as arrays:
        assert {"stem.1.running_mean", "stem.1.running_var", "stem.1.num_batches_tracked"} <= set(arrays.files)
        assert not np.allclose(arrays["stem.1.running_var"], 1)  # trained statistics, not the initial ones
        assert not any("log_" in key or key.endswith(".mask") for key in arrays.files)  # the method's own stay out


def test_a_plain_sequential_trains_by_target_with_input_shape_and_classes_given(config, tmp_path):
    """A function returning an nn.Sequential; its input_shape and classes come from the data."""
    summary = train(
        small(config, "dataset=digits", "model=custom", "model._target_=user_nets.plain_mlp", "method=vardrop_lr_ar"),
        tmp_path,
    )
    assert summary["status"] == "completed" and list(summary["layers"]) == ["1", "3"]
    assert [summary["layers"][n]["shape"] for n in ("1", "3")] == [[32, 64], [10, 32]]


@pytest.mark.parametrize("method", ["dense", "logsum", "vardrop_lr_ar", "hard_concrete"])
def test_a_stack_of_a_users_resnet_follows_each_single_run(method, config, held_noise, tmp_path):  # noqa: F811
    """Each configuration its own BatchNorm statistics: a stack of two ends where its two single runs end (noise held),
    as far as float32 rounding allows."""
    cfgs = [
        config(
            *RESNET,
            f"method={method}",
            "device=cpu",
            "progress=never",
            "epochs=1",
            f"seed={i}",
            f"lr={lr}",
            "batch_size=128",
            "data.train_limit=1024",
        )
        for i, lr in enumerate((1e-2, 5e-3))
    ]
    for i, cfg in enumerate(cfgs):
        train(cfg, tmp_path / f"single{i}")
    summaries = stack(cfgs, [tmp_path / f"stack{i}" for i in range(2)]).fit()
    assert [s["stacked"] for s in summaries] == [2, 2]
    for i, lr in enumerate((1e-2, 5e-3)):
        a, b = np.load(tmp_path / f"single{i}" / "weights.npz"), np.load(tmp_path / f"stack{i}" / "weights.npz")
        # 8 steps of 128 examples; the longest sum is a conv's gradient over 128 examples x 64 positions x 9 taps
        assert_follows(a, b, steps=8, longest_product=128 * 64 * 9, lr_sum=8 * lr)
        assert not np.array_equal(
            np.load(tmp_path / "stack0" / "weights.npz")["stem.1.running_mean"],
            np.load(tmp_path / "stack1" / "weights.npz")["stem.1.running_mean"],
        )


def test_a_users_npz_is_split_and_normalised_on_its_training_split(config, digits_npz, tmp_path):
    run = one(
        small(
            config,
            "dataset=npz",
            f"dataset.path={digits_npz}",
            "dataset.val_size=200",
            "model=custom",
            "model._target_=user_nets.TinyResNet",
            "method=logsum",
        ),
        tmp_path,
    )
    assert (len(run.data.train), len(run.data.val), len(run.data.test), run.data.image) == (1200, 200, 397, (1, 8, 8))
    x = run.data.train.x.view(-1, 1, 8, 8)
    assert x.mean().abs() < 1e-5 and abs(float(x.std()) - 1) < 1e-2
    assert run.data.classes == 10 and run.settings.cfg.dataset.path == str(digits_npz)


@pytest.mark.parametrize("method", [m for m in methods.names() if m != "fixed_mask"])
def test_every_method_trains_a_users_resnet_on_a_users_npz(method, config, digits_npz, tmp_path):
    run = one(
        small(
            config,
            "dataset=npz",
            f"dataset.path={digits_npz}",
            "dataset.val_size=200",
            "model=custom",
            "model._target_=user_nets.TinyResNet",
            f"method={method}",
            "epochs=1",
            *(PRUNING if method == "magnitude_pruning" else ()),
        ),
        tmp_path,
    )
    summary = run.fit()[0]
    assert summary["status"] == "completed" and summary["identity"]["dataset_path"] == str(digits_npz)
    assert reloaded_error(tmp_path, run.data) == summary["test_error"]


def bad_npz(tmp_path, **arrays):
    base = {
        "x_train": np.zeros((20, 64), np.float32),
        "y_train": np.arange(20) % 4,
        "x_test": np.zeros((5, 64), np.float32),
        "y_test": np.arange(5) % 4,
    }
    base.update(arrays)
    path = tmp_path / "bad.npz"
    np.savez(path, **{k: v for k, v in base.items() if v is not None})
    return path


@pytest.mark.parametrize(
    "arrays, message",
    [
        (
            {"y_test": None},
            "has no y_test (it holds x_test, x_train, y_train); dataset=npz needs x_train, y_train, x_test, y_test",
        ),
        ({"y_train": np.arange(20) % 4 - 1}, "y_train holds label -1, outside [0, 3)"),  # classes from y_train: 3
        ({"x_test": np.full((5, 64), np.nan, np.float32)}, "x_test holds NaN or infinite values"),
        ({"x_test": np.zeros((5, 63), np.float32)}, "x_test's examples are [63], x_train's [64]"),
        ({"y_train": np.arange(19) % 4}, "x_train has 20 examples and y_train 19"),
    ],
)
def test_bad_data_is_refused_in_one_line_naming_the_file(arrays, message, config, tmp_path):
    path = bad_npz(tmp_path, **arrays)
    cfg = config("dataset=npz", f"dataset.path={path}", "dataset.val_size=4", "model=mlp", "device=cpu")
    with pytest.raises(TrainError, match=re.escape(message)) as err:
        one(cfg, tmp_path / "run")
    assert "\n" not in str(err.value) and (str(path) in str(err.value) or "npz" in str(err.value))


def test_data_that_does_not_fit_the_network_is_refused_before_any_folder(config, tmp_path):
    path = bad_npz(tmp_path)
    cfg = config("dataset=npz", f"dataset.path={path}", "model=custom", "model._target_=user_nets.WrongWidth")
    # torch's own words differ between releases ("addmm: mat1 and mat2 ..." in 2.15)
    with pytest.raises(
        TrainError,
        match=r"WrongWidth fails on a batch of the data, shape \[2, 64\] \(RuntimeError: "
        r".*shapes cannot be multiplied",
    ):
        resolve(cfg)


@pytest.mark.parametrize(
    "target, message",
    [
        ("user_nets.Missing", "model._target_=user_nets.Missing does not import"),
        (
            "no_such_package.Net",
            "model._target_=no_such_package.Net does not import (ModuleNotFoundError: No module "
            "named 'no_such_package'; no_such_package.py is not in the current folder (",
        ),
        ("user_nets.OnlyNorm", "user_nets.OnlyNorm has no nn.Linear or nn.Conv2d for a method to sparsify"),
        (
            "user_nets.ThreeOutputs",
            "user_nets.ThreeOutputs returns [2, 3] for a batch of 2; it must return logits, batch x 10",
        ),
        ("user_nets.WrongWidth", "user_nets.WrongWidth fails on a batch of the data, shape [2, 1, 8, 8]"),
        ("torch.nn.Identity", "torch.nn.Identity has no nn.Linear or nn.Conv2d for a method to sparsify"),
        (
            "user_nets.Tied",
            "user_nets.Tied uses one parameter in several places (a.weight, b.weight): adrop trains each "
            "layer's weights as its own",
        ),
        ("user_nets.WeightNormed", "fc (ParametrizedLinear) has a parametrization (weight_norm, spectral_norm, ...)"),
    ],
)
def test_a_bad_network_is_refused_at_start_in_one_line(target, message, config):
    with pytest.raises(TrainError, match=re.escape(message)) as err:
        resolve(config("dataset=digits", "model=custom", f"model._target_={target}"))
    assert "\n" not in str(err.value)


def test_a_wrong_constructor_argument_is_refused_in_one_line(config):
    with pytest.raises(
        TrainError,
        match=re.escape(
            "model=custom (user_nets.TinyResNet) could not be made: TypeError: "
            "TinyResNet.__init__() got an unexpected keyword argument 'widht'"
        ),
    ):
        resolve(config(*RESNET, "+model.widht=4"))


def test_model_custom_without_a_target_says_what_to_set(config):
    with pytest.raises(TrainError, match=re.escape("model=custom names no class: set model._target_=<module.Class>")):
        resolve(config("dataset=digits", "model=custom"))


@pytest.mark.slow
def test_a_users_config_folder_names_its_model(adrop, tmp_path):
    """`--config-dir my_conf model=mynet`: a file of `_target_` and arguments, named by its class in the summary."""
    (tmp_path / "my_conf" / "model").mkdir(parents=True)
    (tmp_path / "my_conf" / "model" / "mynet.yaml").write_text("_target_: user_nets.TinyResNet\nwidth: 4\n")
    from pathlib import Path

    env = {"PYTHONPATH": str(Path(user_nets.__file__).parent)}
    out = adrop(
        "train",
        "--config-dir",
        "my_conf",
        "model=mynet",
        "dataset=digits",
        "epochs=1",
        "device=cpu",
        "method=logsum",
        "hydra.run.dir=run",
        env=env,
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["model"] == "TinyResNet" and summary["layers"]["head"]["shape"] == [10, 4]
    assert "width" in summary["identity"]["model"]


def write_idx(path, array: np.ndarray) -> None:
    """An idx file of unsigned bytes (the MNIST family's format)."""
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


def test_a_torchvision_dataset_loads_from_its_local_layout(config, tmp_path):
    """dataset=torchvision dataset.name=KMNIST reads torchvision's own layout under data.root, without a download."""
    raw = tmp_path / "data" / "KMNIST" / "raw"
    raw.mkdir(parents=True)
    g = np.random.default_rng(0)
    for split, n in (("train", 300), ("t10k", 50)):
        write_idx(raw / f"{split}-images-idx3-ubyte", g.integers(0, 256, (n, 28, 28)))
        write_idx(raw / f"{split}-labels-idx1-ubyte", np.arange(n) % 10)
    run = one(
        config(
            "dataset=torchvision",
            "dataset.name=KMNIST",
            "dataset.val_size=50",
            f"data.root={tmp_path / 'data'}",
            "data.download=false",
            "model=conv_small",
            "device=cpu",
            "progress=never",
            "epochs=1",
        ),
        tmp_path / "run",
    )
    assert (len(run.data.train), len(run.data.val), len(run.data.test), run.data.image) == (250, 50, 50, (1, 28, 28))
    x = run.data.train.x
    # KMNIST's usual normalisation (mean 0.1918, std 0.3483), not the training split's
    assert float(x.min()) == pytest.approx(-0.1918 / 0.3483) and float(x.max()) == pytest.approx(0.8082 / 0.3483)
    assert run.fit()[0]["status"] == "completed"


def test_a_missing_torchvision_dataset_is_one_line_naming_the_folder(config, tmp_path):
    with pytest.raises(
        TrainError,
        match=re.escape(
            f"torchvision.datasets.CIFAR10 could not be loaded from {tmp_path} "
            "(data.download=false): RuntimeError: Dataset not found"
        ),
    ):
        one(
            config(
                "dataset=cifar10",
                f"data.root={tmp_path}",
                "data.download=false",
                "model=custom",
                "model._target_=user_nets.TinyResNet",
                "+model.in_channels=3",
                "device=cpu",
            ),
            tmp_path / "run",
        )


def test_fake_data_through_torchvision_trains_with_crop_and_flip(config, tmp_path):
    run = one(
        config(
            "dataset=torchvision",
            "dataset.name=FakeData",
            "dataset.val_size=16",
            "dataset.augment=crop_flip",
            "+dataset.options={size: 64, image_size: [3, 16, 16], num_classes: 4}",
            "model=custom",
            "model._target_=user_nets.TinyResNet",
            "+model.in_channels=3",
            "device=cpu",
            "progress=never",
            "epochs=1",
            "batch_size=16",
        ),
        tmp_path,
    )
    assert (len(run.data.train), run.data.image, run.data.classes) == (48, (3, 16, 16), 4)
    assert run.fit()[0]["status"] == "completed"


def test_crop_and_flip_give_each_image_a_crop_of_its_padded_self_maybe_flipped():
    import torch.nn.functional as F

    from adrop.train.data.tensors import augment

    torch.manual_seed(0)
    x = torch.randn(2, 5, 3 * 8 * 8)
    out = augment(x, (3, 8, 8), "crop_flip").view(10, 3, 8, 8)
    padded = F.pad(x.view(10, 3, 8, 8), (4, 4, 4, 4))
    found = []
    for image, source in zip(out, padded):
        found.append(
            [
                (dy, dx, flip)
                for dy in range(9)
                for dx in range(9)
                for flip in (False, True)
                if torch.equal(image, (lambda c: c.flip(-1) if flip else c)(source[:, dy : dy + 8, dx : dx + 8]))
            ]
        )
    assert all(found) and len({f[0] for f in found}) > 3  # every image one of its crops; not all the same crop


@pytest.fixture(scope="module")
def resnet_run(tmp_path_factory):
    from conftest import compose_config

    folder = tmp_path_factory.mktemp("resnet") / "run"
    cfg = compose_config(*RESNET, "method=logsum", "lam=0.02", "lr=1e-2", "epochs=3", "device=cpu", "progress=never")
    from adrop.train.run_folder import run_files

    summary = train(cfg, folder)
    run_files.write_config(folder, resolve(cfg).cfg, {}, [])
    return folder, summary


def test_csr_export_of_a_users_network_rebuilds_its_state_dict(resnet_run, capsys):
    from adrop import export
    from adrop.commands.export import main

    folder, summary = resnet_run
    assert main([str(folder), "--format", "csr", "--out", str(folder / "net.csr.npz")]) == 0
    assert f"test error {summary['test_error']:.4f}, as the run's" in capsys.readouterr().out
    arrays = dict(np.load(folder / "net.csr.npz"))
    state = export.csr_state(arrays)
    with np.load(folder / "weights.npz") as saved:
        assert list(state) == saved.files and all(np.array_equal(state[k], saved[k]) for k in saved.files)
    net = user_nets.TinyResNet()
    net.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in state.items()})
    assert set(arrays["layers"]) == set(LAYERS) and "blocks.0.conv1.bias" not in arrays  # bias=False stays so
    summary = json.loads((folder / "summary.json").read_text())
    assert arrays["input_mean"].tolist() == pytest.approx(summary["input_normalisation"]["mean"])


def test_onnx_export_of_a_users_network_runs_in_onnxruntime_with_the_runs_error(resnet_run, capsys):
    pytest.importorskip("onnxscript")
    import onnxruntime as ort

    from adrop import export
    from adrop.commands.export import main

    folder, summary = resnet_run
    assert main([str(folder), "--format", "onnx", "--out", str(folder / "net.onnx")]) == 0
    assert "input x of shape N x 1 x 8 x 8" in capsys.readouterr().out
    data = export.test_data(export.read(folder), None)
    import onnx

    meta = {p.key: json.loads(p.value) for p in onnx.load(str(folder / "net.onnx")).metadata_props}
    assert meta["input_std"] == json.loads((folder / "summary.json").read_text())["input_normalisation"]["std"]
    session = ort.InferenceSession(str(folder / "net.onnx"), providers=["CPUExecutionProvider"])
    logits = session.run(["logits"], {"x": data.test.x.numpy().reshape(-1, 1, 8, 8)})[0]
    assert (logits.argmax(1) != data.test.y.numpy()).sum() / len(data.test) == summary["test_error"]


def test_compact_export_of_a_users_network_is_refused_in_one_line(resnet_run, capsys):
    from adrop.commands.export import main

    folder, _ = resnet_run
    assert main([str(folder), "--format", "compact", "--out", str(folder / "net.compact.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "user_nets.TinyResNet is another network" in err
    assert not (folder / "net.compact.npz").exists()


def test_bench_inference_refuses_a_users_network_in_one_line(resnet_run, capsys):
    from adrop.commands.bench_inference import main

    assert main([str(resnet_run[0])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "user_nets.TinyResNet is another network" in err


def test_a_network_that_cannot_stack_is_named_and_trains_in_stacks_of_one(config):
    from adrop.train.sweep.stacked_jobs import stack_problem

    assert stack_problem(resolve(config(*RESNET))) is None
    why = stack_problem(resolve(config("dataset=digits", "model=custom", "model._target_=user_nets.NumberReadingNet")))
    assert why.startswith("RuntimeError: vmap: It looks like you're calling .item() on a Tensor")
    assert "\n" not in why


@pytest.mark.slow
def test_the_stacked_launcher_says_so_in_one_line_and_trains_stacks_of_one(adrop, tmp_path):
    from pathlib import Path

    env = {"PYTHONPATH": str(Path(user_nets.__file__).parent)}
    out = adrop(
        "train",
        "-m",
        "hydra/launcher=stacked",
        "hydra.launcher.max_stack=2",
        "hydra.launcher.n_jobs=1",
        "dataset=digits",
        "model=custom",
        "model._target_=user_nets.NumberReadingNet",
        "method=dense",
        "seed=0,1",
        "epochs=1",
        "device=cpu",
        "hydra.sweep.dir=sweep",
        env=env,
    )
    assert out.returncode == 0, out.stderr
    said = [line for line in out.stdout.splitlines() if "cannot be stacked" in line]
    assert len(said) == 1 and "its 2 jobs train in stacks of one" in said[0]
    assert "2 jobs in 2 stacks, of sizes 1, 1" in out.stdout
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/summary.json")]
    assert [s["stacked"] for s in summaries] == [1, 1] and all(s["status"] == "completed" for s in summaries)


def test_a_layer_without_a_bias_costs_no_bias_bytes(resnet_run):
    summary = json.loads((resnet_run[0] / "summary.json").read_text())
    conv, head = summary["layers"]["blocks.0.conv1"], summary["layers"]["head"]
    assert conv["dense_bytes"] == 4 * conv["total"]  # bias=False: the weights alone
    assert head["dense_bytes"] == 4 * (head["total"] + 10)


def test_batchnorm_without_statistics_and_unsaved_buffers_stack_per_configuration(config, tmp_path):
    """A batch norm that keeps nothing still mixes its batch: in a stack it runs per configuration, so a stack of two
    follows its two single runs; a buffer the module does not save stays out of weights.npz and the stack alike."""
    cfgs = [
        config(
            "dataset=digits",
            "model=custom",
            "model._target_=user_nets.StatelessNorm",
            "method=dense",
            "device=cpu",
            "progress=never",
            "epochs=1",
            f"seed={i}",
            "lr=1e-2",
            "data.train_limit=512",
        )
        for i in range(2)
    ]
    for i, cfg in enumerate(cfgs):
        train(cfg, tmp_path / f"single{i}")
    stack(cfgs, [tmp_path / f"stack{i}" for i in range(2)]).fit()
    for i in range(2):
        a, b = np.load(tmp_path / f"single{i}" / "weights.npz"), np.load(tmp_path / f"stack{i}" / "weights.npz")
        assert "scaled.scale" not in a.files and "scaled.scale" not in b.files
        assert_follows(a, b, steps=4, longest_product=128 * 64 * 9, lr_sum=4 * 1e-2)


def test_summary_records_the_normalisation_the_inputs_had(resnet_run):
    summary = json.loads((resnet_run[0] / "summary.json").read_text())
    mean, std = summary["input_normalisation"]["mean"], summary["input_normalisation"]["std"]
    assert len(mean) == len(std) == 1 and 0.2 < mean[0] < 0.4 and 0.3 < std[0] < 0.5  # digits' one channel, in [0, 1]


def test_crop_and_flip_pad_with_black(config):
    from adrop.train.data.tensors import augment

    x = torch.full((1, 4, 3 * 8 * 8), 5.0)
    fill = torch.tensor([-1.0, -2.0, -3.0])
    out = augment(x, (3, 8, 8), "crop_flip", fill).view(4, 3, 8, 8)
    for c in range(3):
        assert set(out[:, c].unique().tolist()) <= {5.0, fill[c].item()}


def test_mean_without_std_is_refused(config, digits_npz, tmp_path):
    with pytest.raises(TrainError, match=re.escape("dataset.mean and dataset.std go together")):
        one(
            config(
                "dataset=npz",
                f"dataset.path={digits_npz}",
                "dataset.mean=0.5",
                "dataset.val_size=200",
                "model=mlp",
                "device=cpu",
            ),
            tmp_path / "run",
        )


def test_another_class_under_a_built_in_name_is_another_run(config):
    plain = resolve(config("dataset=digits"))
    other = resolve(config("dataset=digits", "model._target_=user_nets.plain_mlp", "~model.hidden"))
    assert "model" not in plain.identity and "user_nets.plain_mlp" in other.identity["model"]


def test_a_checkpoint_of_another_network_is_refused_in_one_line(config, tmp_path):
    one(config(*RESNET, "device=cpu", "progress=never", "epochs=2"), tmp_path).fit(stop_after=1)
    with pytest.raises(
        TrainError,
        match=r"checkpoint\.pt holds no conv\.bias: it was written by another network or "
        r"an earlier adrop and cannot resume here; train in a new folder",
    ):
        one(
            config(
                "dataset=digits",
                "model=custom",
                "model._target_=user_nets.StatelessNorm",
                "device=cpu",
                "progress=never",
                "epochs=2",
            ),
            tmp_path,
        )


@pytest.mark.parametrize("method", ["adaptive_dropout", "vardrop_lr_ar", "hard_concrete", "magnitude_pruning"])
def test_a_users_resnet_trains_whole_filters_and_reloads(method, config, tmp_path):
    """structure=neuron on a user's module: groups are its layers' filters and input units, units kept are read from
    the weights (no chain to compact: kept_architecture is null), and weights.npz reloads into the user's class."""
    run = one(
        small(
            config,
            *RESNET,
            f"method={method}",
            "structure=neuron",
            "lam=0.05",
            *(PRUNING if method == "magnitude_pruning" else ()),
        ),
        tmp_path,
    )
    summary = run.fit()[0]
    assert summary["status"] == "completed" and summary["structure"] == "neuron"
    assert summary["kept_architecture"] is None and "compact_macs" not in summary["cost"]
    assert reloaded_error(tmp_path, run.data) == summary["test_error"]
    with np.load(tmp_path / "weights.npz") as arrays:
        for name in LAYERS:
            w = arrays[f"{name}.weight"]
            outputs = (w != 0).reshape(w.shape[0], -1).any(1)
            assert summary["layers"][name]["units_out_kept"] == int(outputs.sum())
            if w.ndim == 4:  # a filter is all zeros or has no zero forced on it by the method
                assert all((f == 0).all() or (f != 0).mean() > 0.5 for f in w)
    # pruning (half the weights) and adaptive dropout lose whole filters in these 2 epochs at lam 0.05; VarDrop's noise
    # and HardConcrete's gates need longer
    if method in ("magnitude_pruning", "adaptive_dropout"):
        assert any(summary["layers"][n]["units_out_kept"] < summary["layers"][n]["units_out"] for n in LAYERS[:-1])


def test_shift_gives_each_image_a_translation_of_up_to_two_pixels_never_flipped():
    import torch.nn.functional as F

    from adrop.train.data.tensors import augment

    torch.manual_seed(0)
    x = torch.randn(40, 1 * 8 * 8)
    out = augment(x, (1, 8, 8), "shift").view(40, 1, 8, 8)
    padded = F.pad(x.view(40, 1, 8, 8), (2, 2, 2, 2))
    found = [
        [(dy, dx) for dy in range(5) for dx in range(5) if torch.equal(image, source[:, dy : dy + 8, dx : dx + 8])]
        for image, source in zip(out, padded)
    ]
    assert all(len(f) == 1 for f in found) and len({f[0] for f in found}) > 5


def test_mnist_takes_its_augmentation(mnist, tmp_path):
    shifted = one(mnist("dataset.augment=shift", "epochs=1", "data.train_limit=256"), tmp_path / "shifted")
    plain = one(mnist("epochs=1", "data.train_limit=256"), tmp_path / "plain")
    assert (shifted.data.augment, plain.data.augment) == ("shift", "none")
    shifted.fit(), plain.fit()
    losses = [
        next(csv.DictReader(open(tmp_path / name / "metrics.csv")))["train_loss"] for name in ("shifted", "plain")
    ]
    assert losses[0] != losses[1]
    with pytest.raises(Exception, match="dataset.augment=turn"):
        one(mnist("dataset.augment=turn", "epochs=1"), tmp_path / "turn")


def test_every_image_source_takes_its_augmentation(synthetic, tmp_path):
    """Generated features seen as images take the way MNIST's pixels take (tensors.from_splits), where augment was
    once dropped: this runs without MNIST."""
    image = ("dataset.features=64", "dataset.image=[1,8,8]", "epochs=1")
    shifted = one(synthetic(*image, "dataset.augment=shift"), tmp_path / "shifted")
    plain = one(synthetic(*image), tmp_path / "plain")
    assert (shifted.data.augment, plain.data.augment) == ("shift", "none")
    shifted.fit(), plain.fit()
    losses = [
        next(csv.DictReader(open(tmp_path / name / "metrics.csv")))["train_loss"] for name in ("shifted", "plain")
    ]
    assert losses[0] != losses[1]
