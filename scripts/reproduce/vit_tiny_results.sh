#!/usr/bin/env bash
# The ViT-tiny results (docs/results/vit_tiny.md): MNIST (its first 12,000 training images), 10 epochs.
#   scripts/reproduce/vit_tiny_results.sh  (a rerun continues: finished runs are replayed, not
#                                                              trained)
# 1. dense, seeds 0-2: the reference;
# 2. five methods at one matched sparsity (10% of the weights), lam searched on seed 0, then seeds 1 and 2 at its lam;
# 3. the duality as an equivalence: adaptive dropout against its dual penalty LogSum at one lam, seeds 0-4 paired;
# 4. by groups (structure=neuron: attention's input projection by heads, the Transformer layers' other Linear layers
#    by output rows, the patch embedding by filters, the head by output rows), the five methods at one matched sparsity
#    (25% of the weights), as in 2; magnitude pruning, whose search is its one run (final_sparsity 0.75), seeds 1, 2.
set -euo pipefail
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
OUT=${OUT:-outputs/multirun/vit_tiny}
COMMON=(experiment=vit_tiny_mnist data.train_limit=12000 "data.root=${DATA}" progress=never "$@")
adrop train -m method=dense seed=0,1,2 "hydra.sweep.dir=${OUT}/dense" "${COMMON[@]}"
adrop train -m hydra/sweeper=lam_search hydra.sweeper.target_nonzero=0.1 'hydra.sweeper.then_seeds=[1,2]' \
  hydra.sweeper.short_epochs=1 hydra.sweeper.max_val_error=0.5 \
  method=logsum,adaprox,adaptive_dropout,hard_concrete,magnitude_pruning "hydra.sweep.dir=${OUT}/matched_0.1" \
  "${COMMON[@]}" || true   # a method not brought to the target is named; the others' runs stand
adrop train -m method=logsum,adaptive_dropout lam=1e-3 seed=0,1,2,3,4 "hydra.sweep.dir=${OUT}/equivalence" \
  "${COMMON[@]}"
adrop train -m hydra/sweeper=lam_search hydra.sweeper.target_nonzero=0.25 'hydra.sweeper.then_seeds=[1,2]' \
  hydra.sweeper.short_epochs=1 hydra.sweeper.max_val_error=0.5 structure=neuron \
  method=logsum,adaprox,adaptive_dropout,hard_concrete,magnitude_pruning "hydra.sweep.dir=${OUT}/heads_0.25" \
  "${COMMON[@]}" || true
adrop train -m structure=neuron method=magnitude_pruning method.params.final_sparsity=0.75 seed=1,2 \
  "hydra.sweep.dir=${OUT}/heads_0.25" "${COMMON[@]}"
