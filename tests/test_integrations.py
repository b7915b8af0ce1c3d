"""adrop.integrations with the real frameworks: a Lightning module on scikit-learn's digits and a tiny BERT built from a
config under the Hugging Face Trainer. Each converts before its framework makes the optimizer (which then holds the
method's parameters), steps with the gradient of loss + penalty, logs the sparsity, and strips to a plain model that
a fresh one loads with the same outputs. Each framework's tests skip where it is not installed."""

import functools

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from adrop.methods.base import SparseLayer
from adrop.sparsifier import SparsifyError

TRAINER = dict(
    accelerator="cpu",
    devices=1,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    enable_checkpointing=False,
    num_sanity_val_steps=0,
    log_every_n_steps=1,
)


# -- Lightning ---------------------------------------------------------------------------------------------------------
@pytest.fixture
def pl():
    return pytest.importorskip("lightning.pytorch")


def digits(n=512):
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data[:n] / 16.0, dtype=torch.float32)
    return x, torch.tensor(data.target[:n])


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


@functools.cache
def digits_module():
    """A LightningModule on the digits: its net, a mean cross-entropy, Adam made in configure_optimizers."""
    import lightning.pytorch as pl

    class Digits(pl.LightningModule):
        def __init__(self, n=512, batch_size=64, lr=1e-2):
            super().__init__()
            self.net, self.data, self.batch_size, self.lr = mlp(), digits(n), batch_size, lr

        def forward(self, x):
            return self.net(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.cross_entropy(self(x), y)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=self.lr)

        def train_dataloader(self):
            return torch.utils.data.DataLoader(
                torch.utils.data.TensorDataset(*self.data),
                batch_size=self.batch_size,
                shuffle=True,
                generator=torch.Generator().manual_seed(0),
            )

    return Digits


def sparsify_callback():
    from adrop.integrations.lightning import Sparsify

    return Sparsify


def test_lightning_trains_logs_the_sparsity_and_strips_to_a_plain_module(pl, tmp_path):
    from lightning.pytorch.loggers import CSVLogger

    callback = sparsify_callback()(method="logsum", lam=1e-2)
    module = digits_module()()
    trainer = pl.Trainer(max_epochs=3, callbacks=[callback], **{**TRAINER, "logger": CSVLogger(tmp_path, name="run")})
    trainer.fit(module)
    stats = callback.stats()
    fraction = stats.nonzero.sum() / stats.total.sum()
    assert list(stats.layer) == ["net.0", "net.2"] and 0 < fraction < 1  # it prunes

    logged = pd.read_csv(next(tmp_path.glob("run/*/metrics.csv")))
    per_epoch = logged.dropna(subset=["sparsity/nonzero_fraction"])
    assert list(per_epoch.epoch) == [0, 1, 2]
    assert per_epoch["sparsity/nonzero_fraction"].iloc[-1] == pytest.approx(fraction)
    assert per_epoch["sparsity/net.0"].iloc[-1] == pytest.approx(stats.nonzero_fraction[0])
    assert (per_epoch["sparsity/collapsed"] == 0).all()  # a collapse would be logged as 1

    x, _ = digits()
    module.eval()
    with torch.no_grad():
        before = module(x)
    plain = callback.strip()
    assert plain is module and [type(m) for m in module.net] == [nn.Linear, nn.ReLU, nn.Linear]
    torch.save(module.net.state_dict(), tmp_path / "net.pt")
    fresh = mlp(seed=1)
    fresh.load_state_dict(torch.load(tmp_path / "net.pt", weights_only=True))
    with torch.no_grad():
        assert torch.equal(fresh(x), before)
    assert int((fresh[0].weight != 0).sum()) == stats.nonzero[0]


def test_lightning_steps_with_the_gradient_of_loss_plus_penalty(pl):
    """Two accumulated batches to a step: the step's gradient is their mean loss's plus the penalty's, once."""
    Sparsify = sparsify_callback()
    seen = {}

    class Recording(digits_module()):
        def training_step(self, batch, batch_idx):
            seen.setdefault("batches", []).append(batch)
            return super().training_step(batch, batch_idx)

        def on_before_optimizer_step(self, optimizer):  # after the callbacks' hook: the gradients the step uses
            if "grads" in seen:
                return
            params = [p for p in self.parameters() if p.requires_grad]
            seen["grads"] = [p.grad.clone() for p in params]
            with torch.enable_grad():
                loss = sum(F.cross_entropy(self(x), y) for x, y in seen["batches"]) / len(seen["batches"])
                seen["loss"] = torch.autograd.grad(loss, params, retain_graph=True)
                seen["loss_plus_penalty"] = torch.autograd.grad(loss + callback.sparsifier.penalty(), params)

    callback = Sparsify(method="logsum", lam=0.1)
    trainer = pl.Trainer(max_steps=1, accumulate_grad_batches=2, callbacks=[callback], **TRAINER)
    trainer.fit(Recording())
    assert len(seen["batches"]) == 2
    for got, want in zip(seen["grads"], seen["loss_plus_penalty"]):
        assert torch.allclose(got, want, atol=1e-6)
    assert any(not torch.allclose(g, w, atol=1e-4) for g, w in zip(seen["grads"], seen["loss"]))  # the penalty adds


def test_lightning_optimizer_holds_the_method_parameters_the_conversion_creates(pl):
    callback = sparsify_callback()(method="vardrop", lam=1e-3)
    module = digits_module()()
    trainer = pl.Trainer(max_steps=3, callbacks=[callback], **TRAINER)
    trainer.fit(module)
    created = [layer.log_alpha_param for layer in callback.sparsifier.layers]
    held = {id(p) for group in trainer.optimizers[0].param_groups for p in group["params"]}
    assert all(id(p) in held for p in created)
    assert all((p != -5.0).any() for p in created)  # trained from their initial log alpha


def test_lightning_refuses_an_optimizer_made_before_the_conversion(pl):
    class Early(digits_module()):
        def __init__(self):
            super().__init__()
            self.early = torch.optim.Adam(self.parameters(), lr=1e-2)  # the plain layers' weights

        def configure_optimizers(self):
            return self.early

    trainer = pl.Trainer(max_steps=1, callbacks=[sparsify_callback()(method="logsum", lam=1e-3)], **TRAINER)
    with pytest.raises(
        SparsifyError,
        match=r"no optimizer of the Trainer holds net\.0\.weight: make it in "
        r"configure_optimizers",
    ):
        trainer.fit(Early())


def test_lightning_module_option_sparsifies_that_submodule_only(pl):
    class WithHead(digits_module()):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(10, 10)  # outside the net: stays dense

        def forward(self, x):
            return self.head(self.net(x))

    module = WithHead()
    callback = sparsify_callback()(method="logsum", lam=1e-3, module="net")
    pl.Trainer(max_steps=2, callbacks=[callback], **TRAINER).fit(module)
    assert callback.sparsifier.names == ["0", "2"] and type(module.head) is nn.Linear
    assert callback.sparsifier.model is module.net


def test_lightning_training_step_that_calls_a_submodule_trains_adaptive_dropout(pl):
    class CallsTheNet(digits_module()):
        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.cross_entropy(self.net(x), y)  # not self(x): the LightningModule's forward never runs

    module = CallsTheNet()
    callback = sparsify_callback()(method="adaptive_dropout", lam=1e-2)
    pl.Trainer(max_steps=6, callbacks=[callback], **TRAINER).fit(module)
    sp = callback.sparsifier
    assert sp.steps == 6 and sp.names == ["net.0", "net.2"]
    assert any(not bool((layer.alpha == 1).all()) for layer in sp.layers)  # the alphas follow the weights


@pytest.mark.parametrize("strategy", ["ddp_spawn", "ddp_notebook"])
def test_lightning_refuses_a_strategy_that_hands_back_only_the_weights(pl, strategy):
    from adrop.sparsifier import SparsifyError

    trainer = pl.Trainer(**{**TRAINER, "strategy": strategy, "devices": 2})
    callback = sparsify_callback()(method="logsum", lam=1e-3)
    with pytest.raises(SparsifyError, match="use strategy='ddp'"):
        callback.setup(trainer, digits_module()(), "fit")  # where the Trainer's processes call it


def test_lightning_ends_at_a_target_over_the_estimated_stepping_batches(pl, tmp_path):
    from lightning.pytorch.loggers import CSVLogger

    callback = sparsify_callback()(method="adaprox", target=0.3)
    trainer = pl.Trainer(max_epochs=3, callbacks=[callback], **{**TRAINER, "logger": CSVLogger(tmp_path, name="run")})
    trainer.fit(digits_module()())
    stats = callback.stats()
    assert stats.nonzero.sum() / stats.total.sum() == pytest.approx(0.3, rel=0.05)
    assert callback.sparsifier.target.total_steps == 24  # 512 digits in batches of 64, three epochs
    logged = pd.read_csv(next(tmp_path.glob("run/*/metrics.csv"))).dropna(subset=["sparsity/lam"])
    assert logged["sparsity/lam"].iloc[-1] == pytest.approx(callback.sparsifier.lam)


def test_lightning_pruning_schedule_spans_the_estimated_stepping_batches(pl):
    callback = sparsify_callback()(method="magnitude_pruning", final_sparsity=0.5, scope="layer")
    trainer = pl.Trainer(max_epochs=2, callbacks=[callback], **TRAINER)
    trainer.fit(digits_module()())
    sp = callback.sparsifier
    assert sp.method.total_steps == sp.steps == 16  # 512 digits in batches of 64, two epochs
    assert callback.stats().nonzero_fraction.tolist() == pytest.approx([0.5, 0.5], abs=0.01)


def test_lightning_checkpoint_resumes_the_sparsifier(pl, tmp_path):
    Sparsify, Digits = sparsify_callback(), digits_module()
    first = Sparsify(method="adaprox", lam=1e-3)
    trainer = pl.Trainer(max_epochs=1, callbacks=[first], **TRAINER)
    trainer.fit(Digits())
    trainer.save_checkpoint(tmp_path / "one.ckpt")
    assert first.sparsifier.steps == 8

    resumed = Sparsify(method="adaprox", lam=1.0)  # lam, like the steps, comes from the checkpoint
    trainer = pl.Trainer(max_epochs=2, callbacks=[resumed], **TRAINER)
    trainer.fit(Digits(), ckpt_path=tmp_path / "one.ckpt")
    assert resumed.sparsifier.steps == 16 and resumed.sparsifier.lam == 1e-3


# -- Hugging Face transformers -----------------------------------------------------------------------------------------
@pytest.fixture
def hf():
    pytest.importorskip("accelerate")
    return pytest.importorskip("transformers")


def tiny_bert(hf, seed=0):
    config = hf.BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(seed)
    return hf.BertForSequenceClassification(config)


class Tokens(torch.utils.data.Dataset):
    """Random sequences of 8 tokens; the label: whether the first token is above the vocabulary's middle."""

    def __init__(self, n=64):
        self.ids = torch.randint(2, 50, (n, 8), generator=torch.Generator().manual_seed(0))
        self.labels = (self.ids[:, 0] > 25).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


def hf_trainer(hf, tmp_path, model, **args):
    settings = dict(
        output_dir=str(tmp_path / "out"),
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        per_device_train_batch_size=16,
        learning_rate=1e-2,
        logging_steps=2,
    )
    return hf.Trainer(model=model, args=hf.TrainingArguments(**{**settings, **args}), train_dataset=Tokens())


def test_transformers_trains_logs_the_sparsity_and_saves_a_plain_model(hf, tmp_path):
    from adrop.integrations.transformers import sparsify_trainer

    model = tiny_bert(hf)
    trainer = hf_trainer(hf, tmp_path, model, num_train_epochs=2)
    sp = sparsify_trainer(trainer, method="logsum", lam=1e-2)
    assert "bert.encoder.layer.0.attention.self.query" in sp.names and "classifier" in sp.names
    assert sp.method.total_steps == 8  # 64 sequences in batches of 16, two epochs
    trainer.train()
    stats = sp.stats()
    fraction = stats.nonzero.sum() / stats.total.sum()
    assert 0 < fraction < 1
    logged = [log["sparsity/nonzero_fraction"] for log in trainer.state.log_history]
    assert len(logged) == len(trainer.state.log_history) == 5 and logged[-1] == pytest.approx(fraction)
    assert all(log["sparsity/collapsed"] == 0 for log in trainer.state.log_history)

    x = Tokens().ids
    model.eval()
    with torch.no_grad():
        before = model(input_ids=x).logits
    trainer.save_model(tmp_path / "sparsified")  # before strip: the effective weights under the plain keys
    saved = hf.BertForSequenceClassification.from_pretrained(tmp_path / "sparsified").eval()
    with torch.no_grad():
        assert torch.allclose(saved(input_ids=x).logits, before, atol=1e-6)
    sp.strip().save_pretrained(tmp_path / "plain")
    assert not any(isinstance(m, SparseLayer) for m in model.modules())
    loaded = hf.BertForSequenceClassification.from_pretrained(tmp_path / "plain").eval()
    assert type(loaded.bert.encoder.layer[0].attention.self.query) is nn.Linear
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=x).logits, before)
    assert int((loaded.classifier.weight != 0).sum()) == stats.nonzero[stats.layer == "classifier"].item()


def test_transformers_ends_at_a_target_over_the_trainers_steps(hf, tmp_path):
    from adrop.integrations.transformers import sparsify_trainer

    trainer = hf_trainer(hf, tmp_path, tiny_bert(hf), num_train_epochs=3)
    sp = sparsify_trainer(trainer, method="adaptive_dropout", target=0.4)
    trainer.train()
    stats = sp.stats()
    assert sp.target.total_steps == 12 and stats.nonzero.sum() / stats.total.sum() == pytest.approx(0.4, rel=0.05)
    assert trainer.state.log_history[-1]["sparsity/lam"] == pytest.approx(sp.lam)


def test_gpt2s_conv1d_layers_are_sparsified_trained_and_saved_as_conv1d(hf, tmp_path):
    import adrop

    torch.manual_seed(0)
    config = hf.GPT2Config(
        n_layer=1,
        n_embd=16,
        n_head=2,
        vocab_size=50,
        n_positions=8,
        bos_token_id=0,
        eos_token_id=0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = hf.GPT2LMHeadModel(config)
    sp = adrop.sparsify(model, method="logsum", lam=1e-2, exclude=["lm_head", "transformer.wte"])
    assert {
        "transformer.h.0.attn.c_attn",
        "transformer.h.0.attn.c_proj",
        "transformer.h.0.mlp.c_fc",
        "transformer.h.0.mlp.c_proj",
    } <= set(sp.names)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    x = Tokens().ids
    for _ in range(30):
        loss = model(input_ids=x, labels=x).loss + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    stats = sp.stats().set_index("layer")
    assert stats.loc["transformer.h.0.mlp.c_fc", "nonzero"] < stats.loc["transformer.h.0.mlp.c_fc", "total"]
    model.eval()
    with torch.no_grad():
        before = model(input_ids=x).logits
    sp.strip().save_pretrained(tmp_path / "plain")
    loaded = hf.GPT2LMHeadModel.from_pretrained(tmp_path / "plain").eval()
    assert type(loaded.transformer.h[0].mlp.c_fc).__name__ == "Conv1D"
    assert int((loaded.transformer.h[0].mlp.c_fc.weight != 0).sum()) == stats.loc["transformer.h.0.mlp.c_fc", "nonzero"]
    with torch.no_grad():
        assert torch.allclose(loaded(input_ids=x).logits, before, atol=1e-5)


def test_a_conv1ds_groups_are_its_input_features_and_its_units_read_so(hf):
    import adrop

    config = hf.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50, n_positions=8, bos_token_id=0, eos_token_id=0)
    model = hf.GPT2LMHeadModel(config)
    sp = adrop.sparsify(model, method="logsum", lam=1e-2, structure="neuron", exclude=["lm_head", "transformer.wte"])
    fc = model.transformer.h[0].mlp.c_fc  # 16 inputs, 64 outputs, stored 16 x 64
    with torch.no_grad():
        fc.parametrizations.weight.original[:4] = 0  # four input features
    row = sp.stats().set_index("layer").loc["transformer.h.0.mlp.c_fc"]
    assert (row.units_in_kept, row.units_in, row.units_out_kept, row.units_out) == (12, 16, 64, 64)
    layer = sp.layers[sp.names.index("transformer.h.0.mlp.c_fc")]
    assert layer.inputs_first and tuple(layer.group_shape) == (16, 1)  # one group per input feature


def recorded_step(hf, tmp_path, batch_size, accumulation, lam=0.1):
    """One step of the tiny BERT: the gradients the Trainer's loss left (recorded by a step hook before adrop's),
    those the step used (a hook after adrop's) and the penalty's, per parameter."""
    from adrop.integrations.transformers import sparsify_trainer

    model = tiny_bert(hf)
    trainer = hf_trainer(
        hf,
        tmp_path,
        model,
        max_steps=1,
        gradient_accumulation_steps=accumulation,
        per_device_train_batch_size=batch_size,
        max_grad_norm=0.0,
    )
    sp = sparsify_trainer(trainer, method="logsum", lam=lam)
    params = [p for p in model.parameters() if p.requires_grad]
    seen = {}

    def record(key):
        def hook(*_):
            seen[key] = [p.grad.clone() for p in params]
            if key == "loss":
                with torch.enable_grad():
                    seen["penalty"] = torch.autograd.grad(sp.penalty(), params, allow_unused=True)

        return hook

    class Recording(hf.TrainerCallback):
        def __init__(self, key):
            self.key = key

        def on_train_begin(self, args, state, control, optimizer=None, **kwargs):
            optimizer.optimizer.register_step_pre_hook(record(self.key))

    trainer.callback_handler.callbacks.insert(0, Recording("loss"))  # its step hook runs before adrop's
    trainer.add_callback(Recording("step"))  # and this one after
    trainer.train()
    return seen


def test_transformers_steps_with_the_gradient_of_loss_plus_penalty(hf, tmp_path):
    """One batch to a step, no clipping: the gradients the step uses are those the Trainer's loss left plus the
    penalty's, once."""
    seen = recorded_step(hf, tmp_path, 16, 1)
    assert sum(int((g != 0).sum()) for g in seen["loss"]) > 0
    for step, loss, penalty in zip(seen["step"], seen["loss"], seen["penalty"]):
        assert torch.allclose(step, loss if penalty is None else loss + penalty, atol=1e-7)
    assert sum(p is not None and bool((p != 0).any()) for p in seen["penalty"]) == 11  # 8 Linear, 3 embeddings


def test_transformers_keeps_lam_per_example_under_accumulation_for_a_model_that_ignores_num_items(hf, tmp_path):
    """BertForSequenceClassification takes **kwargs, so the Trainer leaves the division by num_items_in_batch to it,
    and it returns each batch's mean: two accumulated batches of 16 leave twice the gradient of one batch of the same
    32 examples. The penalty's gradient is added twice too: the step is the same multiple of loss + penalty."""
    one = recorded_step(hf, tmp_path / "one", 32, 1)
    two = recorded_step(hf, tmp_path / "two", 16, 2)
    for a, b in zip(two["loss"], one["loss"]):
        assert torch.allclose(a, 2 * b, atol=1e-6)  # the Trainer's sum of means (transformers' behaviour)
    for a, b in zip(two["step"], one["step"]):
        assert torch.allclose(a, 2 * b, atol=1e-6)  # and adrop's penalty keeps its share of it


def test_transformers_optimizer_holds_the_method_parameters_the_conversion_creates(hf, tmp_path):
    from adrop.integrations.transformers import sparsify_trainer

    trainer = hf_trainer(hf, tmp_path, tiny_bert(hf), max_steps=2)
    sp = sparsify_trainer(trainer, method="vardrop", lam=1e-3)
    trainer.train()
    held = {id(p) for group in trainer.optimizer.optimizer.param_groups for p in group["params"]}
    created = [layer.log_alpha_param for layer in sp.layers]
    assert all(id(p) in held for p in created) and all((p != -5.0).any() for p in created)


def test_transformers_resumes_the_step_count_from_a_checkpoint(hf, tmp_path):
    from adrop.integrations.transformers import sparsify_trainer

    first = hf_trainer(hf, tmp_path, tiny_bert(hf), max_steps=4, save_strategy="steps", save_steps=2)
    sparsify_trainer(first, method="adaprox", lam=1e-3)
    first.train()
    resumed = hf_trainer(hf, tmp_path, tiny_bert(hf, seed=1), max_steps=4)
    sp = sparsify_trainer(resumed, method="adaprox", lam=1e-3)
    steps = []

    class Steps(hf.TrainerCallback):  # after SparsifyCallback: the step count it set
        def on_train_begin(self, *args, **kwargs):
            steps.append(sp.steps)

    resumed.add_callback(Steps())
    resumed.train(resume_from_checkpoint=str(tmp_path / "out" / "checkpoint-2"))
    assert steps == [2] and sp.steps == 4  # the checkpoint's two steps, then the two left
    uninterrupted = first.model.state_dict()  # the checkpoint's weights went into the converted model: the same end
    assert all(torch.allclose(uninterrupted[k], v, atol=1e-6) for k, v in resumed.model.state_dict().items())


def test_transformers_refuses_what_it_cannot_sparsify(hf, tmp_path):
    from adrop.integrations.transformers import sparsify_trainer

    model = tiny_bert(hf)
    given = hf_trainer(hf, tmp_path, model, max_steps=1)
    given.optimizer = torch.optim.Adam(model.parameters())
    with pytest.raises(SparsifyError, match=r"the Trainer was given its optimizer \(optimizers=...\)"):
        sparsify_trainer(given, method="logsum", lam=1e-3)

    tied = nn.Sequential(nn.Embedding(50, 16), nn.Linear(16, 50))
    tied[1].weight = tied[0].weight
    with pytest.raises(SparsifyError, match=r"1's weight is tied to 0's: .* pass exclude=\['1'\]"):
        sparsify_trainer(
            hf.Trainer(model=tied, args=hf.TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to=[])),
            method="logsum",
            lam=1e-3,
        )
    assert type(tied[1]) is nn.Linear  # refused before any conversion
