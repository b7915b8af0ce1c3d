"""A finished run's sparse network in forms a user can ship, each checked against the run on the spot.

For adrop's built-in networks (MLPs, LeNet-style conv nets):

    csr       every layer's weight as a scipy.sparse CSR matrix (a conv kernel as out x (in kh kw) rows), in one
              .npz: `layers` (the names in forward order), `architecture`, and per layer `<name>.data` (float32),
              `<name>.indices` and `<name>.indptr` (int32), `<name>.shape` (the weight's torch shape) and
              `<name>.bias`; scipy.sparse.csr_matrix((data, indices, indptr), shape=(shape[0], prod(shape[1:])))
              rebuilds it
    compact   the smaller dense network left when every unit that cannot matter is removed (adrop.compact): an
              input feature or channel no kept unit reads, a hidden unit or filter that nothing reads, or that reads
              nothing (its constant output relu(b) is folded into the next layer's bias); `input_index` says which
              inputs the first layer reads, for a conv net `flat_index` which flattened conv outputs the first
              Linear layer reads. Its architecture is printed as the L0 paper writes it, e.g. 784-300-100-10 ->
              266-41-53-10, 1x28x28-c20-c50-800-500-10 -> 1x28x28-c6-c14-120-38-10
    onnx      an ONNX model (opset 17) of the compact network for onnxruntime (dense Gemm and Conv beat sparse
              products there; its first layer reads all inputs, zero weights for the unread ones, faster than a
              Gather); input `x` (N, features: the dataset's flat normalised rows), output `logits`

For any other network (a user's module, by `_target_`):

    csr       every sparse layer's weight as CSR parts, as above, and every other tensor of the network's state_dict
              (biases, BatchNorm's statistics) under its own key; `keys` lists the state_dict's keys in order
              (csr_state rebuilds the state_dict from the file)
    onnx      the module itself with the run's weights, exported by torch.onnx (torch.export and onnxscript): input
              `x` in the data's shape (N x C x H x W for images), output `logits`; an attention's dead heads and a
              Transformer layer's dead feed-forward units removed first (adrop.heads.compact_heads)
    compact   refused: removing neurons needs to know how layers connect, which only a chain of Linear layers says

Every form carries what the network's inputs and outputs mean (summary.json's): the input normalisation the run used
(input_normalisation: inputs are (x - input_mean) / input_std), a regression's target normalisation
(target_normalisation: the outputs in the targets' units are y * target_std + target_mean) and a language model's
vocabulary (the symbol of each token id); the csr and compact files as arrays `input_mean`, `input_std`,
`target_mean`, `target_std`, `vocabulary`, the ONNX model in its metadata under the same keys (JSON lists).

Each export recomputes the run's test error from the exported file alone (for built-in networks in NumPy/SciPy,
float32; for others with a fresh instance of the module loaded from it, or onnxruntime) and is refused unless it
equals the test_error in the run's summary.json.
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from omegaconf import OmegaConf

from adrop.compact import Compact, conv2d, max_pool2, relu
from adrop.compact import compact as compact_of
from adrop.train.run_folder import run_files


class ExportError(Exception):
    """A run that cannot be exported, or an export that does not reproduce its run: one line for the user."""


@dataclass
class FinishedRun:
    folder: Path
    summary: dict
    config: object
    names: list[str]  # the sparse layers, in order
    weights: dict  # name -> (W, b or None), float32, torch layout
    state: dict  # weights.npz: the network's state_dict as arrays

    @property
    def conv(self) -> bool:
        return any(w.ndim == 4 for w, _ in self.weights.values())

    @property
    def built_in(self) -> bool:
        """One of adrop's MNIST networks (a configuration without `_target_` names one of them by name)."""
        from adrop.train import current_paths

        target = self.config.model.get("_target_")  # a run made before the rooms names the module's old path
        return target is None or current_paths(str(target)).startswith("adrop.train.nets.builtin.")


def read(folder: Path) -> FinishedRun:
    folder = Path(folder)
    summary = run_files.read_summary(folder) if folder.is_dir() else None
    if summary is None:
        raise ExportError(f"{folder} is not a run folder (no summary.json)")
    if summary.get("status") != "completed" or not (folder / run_files.WEIGHTS).exists():
        raise ExportError(
            f"{folder} holds a run that has not completed (status {summary.get('status')}): "
            "finish it first (rerun its command with hydra.run.dir=<that folder>)"
        )
    config_path = folder / run_files.HYDRA_DIR / run_files.CONFIG
    if not config_path.exists():
        raise ExportError(f"{config_path} is missing: the run's configuration is needed to find its data")
    try:
        state = run_files.read_weights(folder)
        names = (
            list(summary["layers"])
            if summary.get("layers")
            else [key.removesuffix(".weight") for key in state if key.endswith(".weight")]
        )
        from adrop.selection import tensor_key

        keys = {n: tensor_key(n, state) for n in names}
        weights = {
            n: (
                state[keys[n]].astype(np.float32),
                state[f"{n}.bias"].astype(np.float32) if keys[n] == f"{n}.weight" and f"{n}.bias" in state else None,
            )
            for n in names
        }
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:  # truncated, or not an npz
        first = str(err).splitlines()[0] if str(err) else "truncated"
        raise ExportError(
            f"{folder / run_files.WEIGHTS} cannot be read ({type(err).__name__}: {first}); the run must "
            "be trained again"
        ) from None
    return FinishedRun(folder, summary, OmegaConf.load(config_path), names, weights, state)


def test_data(run: FinishedRun, data_root: str | None):
    """The run's data (its dataset, normalisation and root, or `data_root`), on the CPU."""
    import torch

    from adrop.train import tasks
    from adrop.train.data import sources

    cfg = run.config
    if data_root is not None:
        cfg.data.root = data_root
    cfg.data.download = False
    try:
        return sources.load(cfg.dataset, cfg.data, torch.device("cpu"), tasks.of(run.summary))
    except sources.DataError as err:
        raise ExportError(f"{err} (or pass --data)") from None


def test_split(run: FinishedRun, data_root: str | None):
    """The run's test set as NumPy arrays, and its image shape."""
    data = test_data(run, data_root)
    return data.test.x.numpy(), data.test.y.numpy(), data.image


def input_shape(run: FinishedRun, x: np.ndarray, image) -> tuple:
    return tuple(image) if image else (x.shape[1],)


def module_of(run: FinishedRun, state: dict, shape: tuple, classes: int):
    """A fresh instance of the run's module (its `_target_` and arguments) with `state` loaded, in eval mode."""
    import torch

    from adrop.train.nets import network

    try:
        module = network.instantiate(run.config.model, shape, classes)
    except network.NetworkError as err:
        raise ExportError(str(err)) from None
    try:
        module.load_state_dict({key: torch.from_numpy(np.asarray(value)) for key, value in state.items()})
    except RuntimeError as err:  # the class changed since the run: other keys or shapes
        raise ExportError(
            f"{run.config.model._target_} does not take the run's weights (has the class changed "
            f"since?): {' '.join(str(err).split())[:200]}"
        ) from None
    return module.eval()


def module_predict(module, x: np.ndarray, shape: tuple, batch: int = 4096) -> np.ndarray:
    import torch

    with torch.no_grad():
        return np.concatenate(
            [module(torch.from_numpy(x[i : i + batch]).reshape(-1, *shape)).numpy() for i in range(0, len(x), batch)]
        )


def csr(run: FinishedRun) -> dict:
    arrays = {"layers": np.array(run.names), "architecture": np.array(run.summary.get("architecture", ""))}
    arrays.update(meaning_arrays(run.summary))
    for name in run.names:
        w, b = run.weights[name]
        m = sp.csr_matrix(w.reshape(w.shape[0], -1))
        arrays.update(
            {
                f"{name}.data": m.data.astype(np.float32),
                f"{name}.indices": m.indices.astype(np.int32),
                f"{name}.indptr": m.indptr.astype(np.int32),
                f"{name}.shape": np.array(w.shape),
            }
        )
        if b is not None:
            arrays[f"{name}.bias"] = b
    if not run.built_in:
        from adrop.selection import tensor_key

        sparse = {tensor_key(n, run.state) for n in run.names}
        others = {key: value for key, value in run.state.items() if key not in sparse}
        taken = sorted(set(others) & {"layers", "architecture", "keys", *meaning(run.summary)})
        if taken:
            raise ExportError(
                f"the network's state_dict has a tensor named {taken[0]}, a name the csr file gives to "
                "what the export says about the network: the onnx format has no such clash"
            )
        arrays["keys"] = np.array(list(run.state))
        arrays.update(others)
    return arrays


def csr_state(arrays: dict) -> dict:
    """The network's state_dict (as arrays) from a csr export of a network that is not built in."""
    state = {}
    from adrop.selection import tensor_key

    layers = set(arrays["layers"])
    for key in list(arrays["keys"]):
        name = key if key in layers else key.removesuffix(".weight")
        if name in layers and tensor_key(name, arrays["keys"]) == key:
            shape = tuple(arrays[f"{name}.shape"])
            m = sp.csr_matrix(
                (arrays[f"{name}.data"], arrays[f"{name}.indices"], arrays[f"{name}.indptr"]),
                shape=(shape[0], int(np.prod(shape[1:]))),
            )
            state[key] = m.toarray().reshape(shape)
        else:
            state[key] = arrays[key]
    return state


def csr_predict(arrays: dict, x: np.ndarray, image) -> np.ndarray:
    """Logits from a csr export: sparse products, ReLU between layers (conv layers through their dense kernel)."""
    names = list(arrays["layers"])
    for i, name in enumerate(names):
        shape = tuple(arrays[f"{name}.shape"])
        m = sp.csr_matrix(
            (arrays[f"{name}.data"], arrays[f"{name}.indices"], arrays[f"{name}.indptr"]),
            shape=(shape[0], int(np.prod(shape[1:]))),
        )
        if len(shape) == 4:
            x = x.reshape(-1, *image) if x.ndim == 2 else x
            x = max_pool2(relu(conv2d(x, m.toarray().reshape(shape), arrays[f"{name}.bias"])))
            continue
        x = x.reshape(len(x), -1)
        x = np.asarray((m @ x.T).T) + arrays[f"{name}.bias"]
        if i < len(names) - 1:
            x = relu(x)
    return x


def check_compact(run: FinishedRun) -> None:
    """Refuses, in one line, a network whose compact form adrop cannot make."""
    if not run.built_in:
        raise ExportError(
            f"the compact export removes neurons from adrop's built-in networks; "
            f"{run.summary.get('architecture')} is another network (how its layers connect is its "
            "code's): use --format csr or onnx"
        )


def compact_network(run: FinishedRun, image=None) -> tuple[dict, str]:
    """The dense network without the units that cannot matter (adrop.compact), as arrays; and its architecture,
    before -> after. `image`: a conv net's input (channels, height, width)."""
    check_compact(run)
    if run.conv and image is None:
        raise ExportError("the compact form of a conv net needs its input's image shape")
    kept = compact_of(run.names, run.weights, tuple(image) if run.conv else None)
    return {**kept.arrays(), **meaning_arrays(run.summary)}, f"{'-'.join(kept.before)} -> {kept.architecture}"


def compact_layers(arrays: dict) -> list[tuple[np.ndarray, np.ndarray]]:
    """The compact network's (weight, bias) per layer for a runtime given the full inputs (Compact.runtime_layers)."""
    return Compact.from_arrays(arrays).runtime_layers()


def compact_predict(arrays: dict, x: np.ndarray) -> np.ndarray:
    return Compact.from_arrays(arrays).predict(x)


def check(run: FinishedRun, logits: np.ndarray, y: np.ndarray, form: str) -> str:
    """The export's test result, as words ("test error 0.0213"), where it is the run's: a classifier's exact count
    of misclassified examples, another task's first metric within 1e-4 (relative; float32 in another runtime);
    ExportError otherwise."""
    from adrop.train import tasks

    task = tasks.of(run.summary)
    metric = task.metrics[0]
    expected = run.summary[f"test_{metric}"]
    if task.name == "classification":
        got = float(np.sum(logits.argmax(1) != y)) / len(y)
        same = abs(got - expected) <= 0.5 / len(y)
    else:
        import torch

        from adrop.train.data.tensors import Split

        split = Split(torch.zeros(len(y), 1), torch.from_numpy(y))
        got = task.measure(lambda x, state: torch.from_numpy(np.asarray(logits)), None, split, len(y))[metric]
        same = math.isclose(got, expected, rel_tol=1e-4)
    words = f"test {task.label(metric)}"
    if not same:
        raise ExportError(
            f"the {form} export's {words} {got:.6g} differs from the run's {expected:.6g}; nothing written"
        )
    return f"{words} {task.format(metric, got)}"


def without_dead_heads(module) -> tuple:
    """The module without its dead attention heads and feed-forward units (adrop.heads), and what went, as words."""
    from torch import nn

    from adrop.heads import CompactAttention, compact_heads

    def count(m):
        heads = sum(a.num_heads for a in m.modules() if isinstance(a, (nn.MultiheadAttention, CompactAttention)))
        units = sum(
            t.linear1.out_features
            for t in m.modules()
            if isinstance(t, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer))
        )
        return heads, units

    small = compact_heads(module)
    (heads, units), (kept_heads, kept_units) = count(module), count(small)
    said = ([f"attention heads {heads} -> {kept_heads}"] if heads else []) + (
        [f"feed-forward units {units} -> {kept_units}"] if units else []
    )
    return small, "; ".join(said)


def onnx_of_module(module, shape: tuple, tokens: bool = False):
    """The module exported by torch.onnx (torch.export, onnxscript): input `x` (N, *shape; int64 token ids where
    `tokens`, else float32), output `logits`."""
    import warnings

    import torch

    try:
        import onnxscript  # noqa: F401  (torch.onnx's exporter needs it)
    except ImportError:
        raise ExportError(
            "--format onnx of a network that is not built in needs onnxscript: pip install -e '.[export]'"
        ) from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            example = torch.zeros(2, *shape, dtype=torch.int64 if tokens else torch.float32)
            program = torch.onnx.export(
                module,
                (example,),
                input_names=["x"],
                output_names=["logits"],
                dynamic_shapes=({0: torch.export.Dim("n")},),  # whatever forward names it
                dynamo=True,
                verbose=False,
            )
        except Exception as err:
            raise ExportError(
                f"torch.onnx could not export {type(module).__name__} ({type(err).__name__}: "
                f"{' '.join(str(err).split())[:200]})"
            ) from None
    batch = program.model_proto.graph.input[0].type.tensor_type.shape.dim[0]
    if not batch.dim_param:  # torch.export kept the example's batch: the forward read it as a Python number
        raise ExportError(
            f"torch.onnx fixed the batch dimension of {type(module).__name__} at {batch.dim_value}: its forward "
            "reads the batch size as a Python number (len(x), or x.shape[0] passed to reshape or view); write "
            "x.flatten(1) or x.reshape(-1, ...) there, or export --format csr"
        )
    return program.model_proto


def meaning(summary: dict) -> dict:
    """What a network's inputs and outputs mean, from the run's summary.json: input_mean and input_std (its input x
    must already have gone through (x - mean) / std), target_mean and target_std (a regression's outputs are in units
    of those: y * std + mean), vocabulary (a language model's symbol of each token id)."""
    out = {}
    for prefix, key in (("input", "input_normalisation"), ("target", "target_normalisation")):
        if summary.get(key):
            out.update({f"{prefix}_{part}": summary[key][part] for part in ("mean", "std")})
    if summary.get("vocabulary"):
        out["vocabulary"] = summary["vocabulary"]
    return out


def meaning_arrays(summary: dict) -> dict:
    """`meaning` as arrays for an .npz file: float32 numbers, the vocabulary as its symbols (str or int)."""
    return {
        key: np.array(value) if key == "vocabulary" else np.array(value, np.float32)
        for key, value in meaning(summary).items()
    }


def with_metadata(model, run: FinishedRun):
    """The ONNX model with what its inputs and outputs mean (`meaning`) in its metadata, as JSON lists."""
    import json

    for key, value in meaning(run.summary).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, json.dumps(value)
    return model


def onnx_model(run: FinishedRun, image, compact: bool = True):
    """An ONNX graph of the compact network for onnxruntime (Conv, Relu, MaxPool, Flatten, Gemm; its first layer
    reads every input, zero weights for the unread ones, as Compact.runtime_layers says why).
    Input `x`: the dataset's flat normalised rows (N, features); output `logits`. compact=False: the uncompacted
    dense network (for comparison)."""
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        raise ExportError("--format onnx needs onnx and onnxruntime: pip install -e '.[export]'") from None
    nodes, inits, x = [], [], "x"

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    if compact:
        arrays, _ = compact_network(run, image)
        names = list(arrays["layers"])
        weights = dict(zip(names, compact_layers(arrays)))
    else:
        names, weights = run.names, run.weights
    if run.conv:
        nodes.append(helper.make_node("Reshape", [x, const("image_shape", np.array([-1, *image], np.int64))], ["img"]))
        x = "img"
    flat = False
    for i, name in enumerate(names):
        w, b = weights[name]
        last = i == len(names) - 1
        out = "logits" if last else f"{name}_out"
        if w.ndim == 4:
            conv = [x, const(f"{name}.weight", w), const(f"{name}.bias", b)]
            nodes += [
                helper.make_node("Conv", conv, [f"{name}_c"]),
                helper.make_node("Relu", [f"{name}_c"], [f"{name}_r"]),
                helper.make_node("MaxPool", [f"{name}_r"], [out], kernel_shape=[2, 2], strides=[2, 2]),
            ]
            x = out
            continue
        if not flat and run.conv:
            nodes.append(helper.make_node("Flatten", [x], ["flat"], axis=1))
            x, flat = "flat", True
        gemm = out if last else f"{name}_g"
        nodes.append(
            helper.make_node("Gemm", [x, const(f"{name}.weight", w), const(f"{name}.bias", b)], [gemm], transB=1)
        )
        if not last:
            nodes.append(helper.make_node("Relu", [gemm], [out]))
        x = out
    features = run.weights[run.names[0]][0].shape[1] if not run.conv else int(np.prod(image))
    graph = helper.make_graph(
        nodes,
        "adrop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, features])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, None])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="adrop")
    model.ir_version = min(model.ir_version, 9)  # what onnxruntime releases of the last years read
    onnx.checker.check_model(model)
    return model


def onnx_predict(model, x: np.ndarray) -> np.ndarray:
    try:
        import onnxruntime as ort
    except ImportError:
        raise ExportError("--format onnx needs onnx and onnxruntime: pip install -e '.[export]'") from None
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(["logits"], {"x": x if np.issubdtype(x.dtype, np.integer) else x.astype(np.float32)})[0]


compact = compact_network  # the name the export format goes by
