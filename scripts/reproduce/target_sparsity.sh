#!/usr/bin/env bash
# The one-run target against lam_search (docs/results/target_sparsity.md): the ViT of docs/results/vit_tiny.md
# (MNIST's first 12,000 training images, 10 epochs), LogSum, AdaProx and adaptive dropout with target_nonzero=0.1,
# seeds 0-2; then the table against the committed lam_search runs of that page.
#   scripts/reproduce/target_sparsity.sh  (a rerun continues: finished runs are replayed, not trained)
set -euo pipefail
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
OUT=${OUT:-outputs/multirun/vit_tiny}
adrop train -m method=logsum,adaprox,adaptive_dropout seed=0,1,2 target_nonzero=0.1 \
  "hydra.sweep.dir=${OUT}/target_0.1" experiment=vit_tiny_mnist data.train_limit=12000 "data.root=${DATA}" \
  progress=never "$@"
adrop report "${OUT}/target_0.1" --out docs/results/target_sparsity/vit_tiny_0.1
python scripts/reproduce/target_against_search.py
