"""adrop.sparsify in a user's loop, wired the way the docs say: resume exactly (a scheduler, a reloaded optimizer, a
re-made one), an optimizer that cannot train the model refused, one checkpoint convention (the effective weights
under the plain keys), strip leaves nothing of adrop behind, misuse refused, a collapse said."""

import io
import pickle
import re
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import adrop
from adrop.checkpoints import plain_state_dict
from adrop.sparsifier import SparsifyError, SparsityWarning

# one method per family: a penalty, a proximal step, adaptive dropout (noise, alphas), VarDrop (noise, its own
# parameters), gates, a pruning schedule
FAMILIES = {
    "logsum": 1e-2,
    "adaprox": 1e-2,
    "adaptive_dropout": 1e-2,
    "vardrop_lr": 1e-3,
    "hard_concrete": 1e-3,
    "magnitude_pruning": None,
}


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))


def data(n=256):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 20, generator=g)
    return x, x[:, :4].argmax(1)


def setup(method, seed=0):
    """The docs' order: sparsify, optimizer, attach, scheduler."""
    model = mlp(seed)
    options = {"total_steps": 24, "final_sparsity": 0.5, "frequency": 2} if method == "magnitude_pruning" else {}
    sp = adrop.sparsify(model, method=method, lam=FAMILIES[method], **options)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    return model, sp, optimizer, scheduler


def train(model, sp, optimizer, scheduler, x, y, steps):
    for _ in range(steps):
        batch = torch.randint(0, len(x), (32,))  # torch's generator, as the methods' noise
        loss = F.cross_entropy(model(x[batch]), y[batch]) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()


@pytest.mark.parametrize("method", sorted(FAMILIES))
def test_the_docs_checkpoint_recipe_resumes_bitwise_with_a_scheduler(method):
    x, y = data()
    torch.manual_seed(3)
    model, sp, optimizer, scheduler = setup(method)
    train(model, sp, optimizer, scheduler, x, y, 24)
    straight = [t.clone() for t in model.state_dict().values()]

    torch.manual_seed(3)
    model, sp, optimizer, scheduler = setup(method)
    train(model, sp, optimizer, scheduler, x, y, 10)
    buffer = io.BytesIO()
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "sparsifier": sp.state_dict(),
        },
        buffer,
    )
    torch.manual_seed(99)  # another process: other weights, another generator state
    model, sp, optimizer, scheduler = setup(method, seed=7)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    sp.load_state_dict(saved["sparsifier"])
    train(model, sp, optimizer, scheduler, x, y, 14)
    resumed = list(model.state_dict().values())
    assert sp.steps == (24 if sp.needs_steps else 0)
    assert all(torch.equal(a, b) for a, b in zip(straight, resumed))


def test_the_step_size_follows_the_optimizer_after_it_is_reloaded_and_scheduled():
    model = nn.Sequential(nn.Linear(4, 4))
    sp = adrop.sparsify(model, method="adaprox", lam=1e-3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sp.attach(optimizer)
    optimizer.load_state_dict(optimizer.state_dict())  # new param_groups dicts
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.1)
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    scheduler.step()
    assert torch.allclose(sp.step_size()(model[0].weight), torch.tensor(0.01))


def test_an_optimizer_made_before_sparsify_is_refused_attached_or_not():
    x, y = data()
    model = mlp()
    stale = torch.optim.Adam(model.parameters(), lr=1e-2)  # holds the tensors sparsify replaces
    sp = adrop.sparsify(model, method="logsum", lam=1e-2)
    with pytest.raises(SparsifyError, match=r"does not hold 0\.weight .*make it after adrop\.sparsify"):
        sp.attach(stale)
    F.cross_entropy(model(x), y).backward()
    with pytest.raises(SparsifyError, match=r"made before adrop\.sparsify stepped: .* trains nothing of the model"):
        stale.step()
    model(x)  # a forward, a backward and a look at the gradients before any optimizer: nothing to refuse
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with pytest.raises(SparsifyError, match=r"not attached stepped 0\.weight: .*sp\.attach\(optimizer\)"):
        optimizer.step()  # attach is required


def test_a_second_optimizer_that_is_not_attached_is_refused_at_its_step():
    x, y = data()
    model = mlp()
    sp = adrop.sparsify(model, method="adaprox", lam=1e-2)
    sp.attach(torch.optim.Adam(model.parameters(), lr=1e-2))
    second = torch.optim.SGD(model.parameters(), lr=0.1)  # a second phase's optimizer, not attached
    F.cross_entropy(model(x), y).backward()
    with pytest.raises(SparsifyError, match="not attached stepped 0.weight"):
        second.step()
    other = nn.Linear(3, 3)  # an optimizer of something else entirely is none of adrop's business
    torch.optim.SGD(other.parameters(), lr=0.1).step()


def test_a_method_with_a_proximal_step_refuses_a_manual_step_without_the_optimizers_step_size():
    model = mlp()
    sp = adrop.sparsify(model, method="adaprox", lam=1e-2)
    with pytest.raises(SparsifyError, match=r"needs the step size of each optimizer step: call sp\.attach"):
        sp.step()
    pruning = adrop.sparsify(mlp(), method="magnitude_pruning", total_steps=4)
    pruning.step()  # a schedule reads no step size


def test_strip_keeps_the_parameters_an_optimizer_holds_and_a_copy_strips_alone():
    import copy

    model, sp = trained(steps=5)
    twin = copy.deepcopy(model)
    optimizer = sp.optimizer
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    adrop.strip(model)
    assert all(id(p) in held for p in model.parameters())  # fine-tuning the plain model goes on with the optimizer
    adrop.strip(twin)  # the copy shares the parametrized class with the original: stripping it leaves that alone
    assert type(twin.embed) is nn.Embedding and torch.equal(twin.embed.weight, model.embed.weight)


def test_distributed_checkpointing_reads_and_writes_a_sparsified_model():
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict

    model, sp = trained(steps=5)
    state = get_model_state_dict(model)
    assert torch.equal(state["body.0.weight_orig"], model.body[0].weight)
    fresh, _ = trained(steps=1)
    set_model_state_dict(fresh, state)
    assert torch.equal(fresh.body[0].weight, model.body[0].weight)


def test_lam_set_later_is_the_one_eval_uses_and_a_load_can_keep_the_generators():
    model, sp = trained(steps=5)
    sp.lam = 0.5
    assert all(layer.eval_lam == 0.5 for layer in sp.layers)
    with pytest.raises(SparsifyError, match="lam must be >= 0"):
        sp.lam = -1.0
    saved = sp.state_dict()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    sp.load_state_dict(saved, rng=False)
    assert torch.equal(torch.rand(3), expected)


def test_an_optimizer_holding_part_of_the_model_is_refused_and_a_remade_one_replaces_the_first():
    x, y = data()
    model = mlp()
    sp = adrop.sparsify(model, method="adaprox", lam=1e-2)
    with pytest.raises(SparsifyError, match=r"does not hold 2\.weight"):
        sp.attach(torch.optim.Adam(model[0].parameters()))
    first = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(first)
    second = torch.optim.SGD(model.parameters(), lr=0.1)
    sp.attach(second)  # a re-made optimizer: the one that steps from now on
    assert not first._optimizer_step_post_hooks and sp.optimizer is second
    F.cross_entropy(model(x), y).backward()
    second.step()
    assert sp.steps == 1


def test_hard_concrete_with_sgd_is_refused_with_why():
    model = mlp()
    sp = adrop.sparsify(model, method="hard_concrete", lam=1e-3)
    with pytest.raises(SparsifyError, match=r"gates \(log_a\) .* Adam or AdamW"):
        sp.attach(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9))


@pytest.mark.parametrize("lam", [-1e-3, float("nan"), float("inf")])
def test_a_lam_that_is_not_finite_and_nonnegative_is_refused(lam):
    with pytest.raises(SparsifyError, match=re.escape(f"lam must be >= 0, got {lam}")):
        adrop.sparsify(mlp(), method="logsum", lam=lam)


def test_a_penalty_method_needs_its_lam_and_a_method_without_one_does_not():
    with pytest.raises(SparsifyError, match="method 'vardrop_lr_ar' needs lam, the penalty's weight per example"):
        adrop.sparsify(mlp(), method="vardrop_lr_ar")
    assert adrop.sparsify(mlp(), method="dense").lam == 0.0
    with pytest.raises(SparsifyError, match="lam_scale's multipliers must be positive"):
        adrop.sparsify(mlp(), method="logsum", lam=1e-3, lam_scale={"0": -2.0})


class WithEmbedding(nn.Module):
    """Two Linear layers (adrop's own layers) and an embedding (a parametrized tensor)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
        self.embed = nn.Embedding(6, 3)

    def forward(self, x):
        return self.body(x) + self.embed.weight.sum() * 0


def trained(method="logsum", lam=1e-2, steps=60):
    x, y = data()
    torch.manual_seed(0)
    model = WithEmbedding()
    sp = adrop.sparsify(model, method=method, lam=lam)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model, sp


def test_a_state_dict_holds_the_effective_weights_under_the_plain_keys(tmp_path):
    model, sp = trained()
    effective = sp.effective()
    state = model.state_dict()
    assert torch.equal(state["body.0.weight"], effective["body.0"])
    assert torch.equal(state["embed.weight"], effective["embed"])
    plain = WithEmbedding()
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\) in state_dict: \"body\.0\.weight_orig\""):
        plain.load_state_dict(state)  # strictly: adrop's training keys are not the plain class's
    result = plain.load_state_dict(state, strict=False)
    assert not result.missing_keys
    zeros = sum(int((plain.body[i].weight == 0).sum()) for i in (0, 2))
    assert zeros == int(sp.stats().eval("total - nonzero")[:2].sum()) > 0  # sparse, never the dense weights
    plain.load_state_dict(plain_state_dict(model))  # the plain keys alone: strictly
    assert all(torch.equal(plain.state_dict()[k], v) for k, v in plain_state_dict(model).items())
    safetensors = pytest.importorskip("safetensors.torch")
    safetensors.save_file(state, tmp_path / "model.safetensors")
    again = WithEmbedding()
    again.load_state_dict(safetensors.load_file(tmp_path / "model.safetensors"), strict=False)
    assert torch.equal(again.embed.weight, effective["embed"])


def test_an_hf_model_saved_before_strip_loads_its_effective_weights(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        num_labels=2,
    )
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    sp = adrop.sparsify(model, method="logsum", lam=1e-2)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-2)
    sp.attach(optimizer)
    ids = torch.randint(0, 50, (8, 10))
    for _ in range(20):
        loss = model(input_ids=ids, labels=torch.arange(8) % 2).loss + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        trained_logits = model(input_ids=ids).logits
    model.save_pretrained(tmp_path)
    loaded = transformers.BertForSequenceClassification.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        assert torch.allclose(loaded(input_ids=ids).logits, trained_logits, atol=1e-5)
    embedding = loaded.bert.embeddings.word_embeddings.weight
    assert torch.equal(embedding, sp.effective()["bert.embeddings.word_embeddings"])


def test_a_sparsified_model_pickles_and_strip_leaves_no_trace_of_adrop():
    sp2 = adrop.sparsify(nn.Sequential(nn.Linear(20, 8)), method="adaptive_dropout", lam=1e-2)
    sp2.attach(torch.optim.Adam(sp2.model.parameters()))
    buffer = io.BytesIO()
    torch.save(sp2.model, buffer)  # the Sparsifier goes with its hooks, without its optimizer
    assert len(buffer.getvalue()) < 20_000
    plain = adrop.strip(sp2.model)
    assert not plain._forward_pre_hooks and not plain._forward_hooks and not plain[0]._state_dict_hooks
    size = len(pickle.dumps(plain))
    assert size < 1.5 * len(pickle.dumps(nn.Sequential(nn.Linear(20, 8))))
    for call in (sp2.penalty, sp2.stats, sp2.state_dict, sp2.strip):
        with pytest.raises(SparsifyError, match=r"was stripped \(adrop\.strip\)"):
            call()


def test_a_collapsed_network_is_flagged_by_stats():
    model, sp = trained(method="logsum", lam=10.0, steps=120)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats = sp.stats()
    assert stats.attrs["collapsed"].startswith("the network collapsed: ")
    assert any(issubclass(w.category, SparsityWarning) for w in caught)
    assert stats.keeps_nothing.any()
    healthy, sp = trained(lam=1e-3, steps=20)
    assert sp.stats().attrs["collapsed"] is None and not sp.stats().keeps_nothing.any()


def test_a_confident_network_is_not_taken_for_a_collapsed_one():
    model = nn.Sequential(nn.Linear(20, 1), nn.Sigmoid())
    sp = adrop.sparsify(model, method="logsum", lam=1e-3)
    sp.attach(torch.optim.Adam(model.parameters()))
    with torch.no_grad():
        model[0].weight.fill_(50.0)
    batch = torch.rand(8, 20) + 0.5
    model(batch)  # the last training batch: every answer 1.0 in float32
    assert torch.equal(model.eval()(batch), torch.ones(8, 1))
    assert sp.stats().attrs["collapsed"] is None  # an input of zeros answers 0.5: it reads its input


def test_a_method_that_only_counts_steps_counts_them_in_a_users_loop():
    """AdaTikhonov's authors' form has no penalty at the first step only: the library counts every step for it."""
    model = mlp()
    sp = adrop.sparsify(model, method="adatikhonov", lam=1e-2, authors_alpha_clamp=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sp.attach(optimizer)
    x, y = data()
    assert float(sp.penalty()) == 0.0  # the first step's
    for _ in range(2):
        loss = F.cross_entropy(model(x), y) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert sp.steps == 2 and float(sp.penalty()) > 0
