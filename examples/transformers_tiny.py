"""adrop in a Hugging Face Trainer: a tiny BERT classifier built from a config (nothing to download) on a synthetic
task, sparsified with sparsify_trainer, the sparsity in the Trainer's logs, the plain model saved with
save_pretrained and read back with from_pretrained.

    python examples/transformers_tiny.py --steps 60 --method logsum --lam 0.01 --out tiny_bert

adrop sparsifies every weight matrix of BERT: it converts the nn.Linear layers (the attention's query, key, value
and output projections, the feed-forward layers, the pooler and the classifier) and parametrizes the word, position
and token-type embeddings (nn.Embedding); only the layer norms and the biases stay dense. To keep the embeddings
dense, pass exclude=["*embeddings*"] to sparsify_trainer.
"""

import argparse
import sys
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

from adrop import SparsifyError
from adrop.integrations.transformers import sparsify_trainer


class Tokens(torch.utils.data.Dataset):
    """Sequences of 8 random tokens; the label says whether the first is in the upper half of the vocabulary."""

    def __init__(self, n, seed):
        self.ids = torch.randint(2, 50, (n, 8), generator=torch.Generator().manual_seed(seed))
        self.labels = (self.ids[:, 0] >= 26).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.error = lambda message: parser.exit(2, f"{parser.prog}: {message}\n")  # one line, exit 2
parser.add_argument("--steps", type=int, default=60, help="optimizer steps on batches of 32")
parser.add_argument("--method", default="logsum", help="any of adrop's methods")
parser.add_argument("--lam", type=float, default=1e-2, help="the penalty's weight, per example")
parser.add_argument("--out", type=Path, default=Path("tiny_bert"), help="a folder for the Trainer and the model")
args = parser.parse_args()

config = BertConfig(
    vocab_size=50,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=16,
)
torch.manual_seed(0)
model = BertForSequenceClassification(config)
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
trainer = Trainer(model=model, args=training, train_dataset=Tokens(2048, seed=0))
try:
    sp = sparsify_trainer(trainer, method=args.method, lam=args.lam)
except SparsifyError as err:
    print(f"{parser.prog}: {err}", file=sys.stderr)
    sys.exit(2)
trainer.train()  # prints each log: the loss and sparsity/nonzero_fraction

print(sp.stats()[["layer", "shape", "nonzero", "total", "nonzero_fraction"]].to_string(index=False))
test = Tokens(512, seed=1)
model.eval()  # the keep rule: what strip folds in
with torch.no_grad():
    logits = model(input_ids=test.ids).logits
print(f"test accuracy {float((logits.argmax(1) == test.labels).float().mean()):.3f}")
sp.strip().save_pretrained(args.out / "model")
loaded = BertForSequenceClassification.from_pretrained(args.out / "model").eval()
with torch.no_grad():
    same = torch.equal(loaded(input_ids=test.ids).logits, logits)
print(f"saved the plain model to {args.out / 'model'}; from_pretrained gives the same outputs: {same}")
