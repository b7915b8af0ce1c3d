#!/usr/bin/env bash
# The ViT trained to competence (docs/results/vit_mnist.md): experiment=vit_mnist (MNIST's 48,000 training images,
# shifted by up to 2 pixels, 30 epochs), 3 seeds of each arm, one arm after another:
# 1. the references: the dense ViT, and multinomial logistic regression (model=linear) on the same images;
# 2. 10% of the weights, one run each: LogSum, AdaProx and adaptive dropout steered there (target_nonzero=0.1);
#    magnitude pruning to final_sparsity 0.9, per layer and global.
#   scripts/reproduce/vit_mnist.sh  (a rerun continues: finished runs are replayed, not trained)
set -euo pipefail
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
OUT=${OUT:-outputs/multirun/vit_mnist}
COMMON=("data.root=${DATA}" progress=never "$@")
adrop train -m experiment=vit_mnist method=dense seed=0,1,2 "hydra.sweep.dir=${OUT}/dense" "${COMMON[@]}"
adrop train -m model=linear method=dense epochs=30 seed=0,1,2 "hydra.sweep.dir=${OUT}/linear" "${COMMON[@]}"
adrop train -m experiment=vit_mnist method=logsum,adaprox,adaptive_dropout target_nonzero=0.1 seed=0,1,2 \
  "hydra.sweep.dir=${OUT}/target_0.1" "${COMMON[@]}"
adrop train -m experiment=vit_mnist method=magnitude_pruning method.params.final_sparsity=0.9 \
  method.params.scope=layer,global seed=0,1,2 "hydra.sweep.dir=${OUT}/pruning_0.1" "${COMMON[@]}"
