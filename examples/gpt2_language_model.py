"""adrop on a language model in a Hugging Face Trainer: a tiny GPT-2 built from a config (nothing to download), trained
on bytes of a text every Python has (the standard library's textwrap.py, or --text), sparsified with
sparsify_trainer; the perplexity on the text's last tenth, and the plain model saved with save_pretrained and read
back with from_pretrained.

    python examples/gpt2_language_model.py --steps 200 --method logsum --lam 0.001 --out tiny_gpt2

adrop trains GPT-2's attention and feed-forward layers (transformers' Conv1D, through a parametrization of their
weight) and its position embedding. Its output layer shares its weight with the token embedding: both are left out
(a tied weight cannot be sparsified as two), and so are the layer norms.
"""

import argparse
import math
import sys
import sysconfig
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from adrop import SparsifyError
from adrop.integrations.transformers import sparsify_trainer

CONTEXT = 64

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.error = lambda message: parser.exit(2, f"{parser.prog}: {message}\n")  # one line, exit 2
parser.add_argument("--steps", type=int, default=200, help="optimizer steps on batches of 32 windows")
parser.add_argument("--method", default="logsum", help="any of adrop's methods")
parser.add_argument("--lam", type=float, default=1e-3, help="the penalty's weight, per token")
parser.add_argument("--text", type=Path, default=Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py")
parser.add_argument("--out", type=Path, default=Path("tiny_gpt2"), help="a folder for the Trainer and the model")
args = parser.parse_args()
if not args.text.is_file():
    parser.error(f"--text {args.text} is not a file")

data = torch.tensor(list(args.text.read_bytes()), dtype=torch.long)  # bytes as tokens: a vocabulary of 256
cut = len(data) * 9 // 10
if cut < 4 * CONTEXT:
    parser.error(f"--text {args.text} is too short ({len(data)} bytes)")


class Windows(torch.utils.data.Dataset):
    """Windows of CONTEXT bytes; the model predicts each next byte (labels = inputs: GPT-2 shifts them)."""

    def __init__(self, tokens):
        self.tokens = tokens

    def __len__(self):
        return len(self.tokens) - CONTEXT

    def __getitem__(self, i):
        window = self.tokens[i : i + CONTEXT]
        return {"input_ids": window, "labels": window}


config = GPT2Config(vocab_size=256, n_positions=CONTEXT, n_embd=64, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
torch.manual_seed(0)
model = GPT2LMHeadModel(config)
training = TrainingArguments(
    output_dir=str(args.out / "trainer"),
    max_steps=args.steps,
    per_device_train_batch_size=32,
    learning_rate=3e-3,
    logging_steps=max(args.steps // 4, 1),
    save_strategy="no",
    report_to=[],
    use_cpu=True,
    disable_tqdm=True,
)
trainer = Trainer(model=model, args=training, train_dataset=Windows(data[:cut]))
try:
    sp = sparsify_trainer(trainer, method=args.method, lam=args.lam, exclude=["lm_head", "transformer.wte"])
except SparsifyError as err:
    print(f"{parser.prog}: {err}", file=sys.stderr)
    sys.exit(2)
trainer.train()  # prints each log: the loss and sparsity/nonzero_fraction

print(sp.stats()[["layer", "shape", "nonzero", "total", "nonzero_fraction"]].to_string(index=False))
held_out = data[cut:]
test = held_out[: len(held_out) // CONTEXT * CONTEXT].reshape(-1, CONTEXT)
model.eval()  # the keep rule: what strip folds in
with torch.no_grad():
    loss = model(input_ids=test, labels=test).loss.item()
    logits = model(input_ids=test).logits
print(f"held-out perplexity {math.exp(loss):.2f} (per byte, the text's last tenth)")
sp.strip().save_pretrained(args.out / "model")
loaded = GPT2LMHeadModel.from_pretrained(args.out / "model").eval()
with torch.no_grad():
    same = torch.allclose(loaded(input_ids=test).logits, logits, atol=1e-5)
print(f"saved the plain model to {args.out / 'model'}; from_pretrained gives the same outputs: {same}")
