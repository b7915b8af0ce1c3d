#!/usr/bin/env bash
# The rows that following the paper's Algorithm 1 and the authors' code exactly changes (docs/results/authors_code.md,
# "exactly"): the paper's LeNet-300-100 setting, 200 epochs, 3 seeds, each run also evaluated without the keep rule.
#   adaptive_dropout                      Algorithm 1's order (alpha from the weights before the prox): the new default
#   adaprox, authors_keep_rule            the authors' count, alpha stored before each prox
#   adaprox, the authors' code as it runs their count, their per-epoch lr decay and their prox on validation batches
#   adatikhonov, authors_alpha_clamp      their alpha >= 1e-3 and penalty-free first step
#   vardrop_lr / vardrop, authors_clamp   their clamps (log sigma in the noise only / none)
#   vardrop_lr_ar, authors_init           their initialisation, N(0, 0.02^2) weights and zero biases
# The paper-text rows they are compared with are docs/results/paper_table/results.csv.
#
#   scripts/reproduce/authors_exact.sh                  (stacked launcher, 2 workers)
#   EPOCHS=1 scripts/reproduce/authors_exact.sh data.train_limit=512  (arguments go to adrop train)
#
# Writes ${SWEEP_DIR} (default outputs/multirun/authors_exact_e$EPOCHS)/<row>/; an interrupted sweep continues where
# it stopped: run the same command. Then: adrop report ${SWEEP_DIR}/* --paper --out <a new folder>.
set -euo pipefail
EPOCHS=${EPOCHS:-200}
SEEDS=${SEEDS:-0,1,2}
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
SWEEP_DIR=${SWEEP_DIR:-outputs/multirun/authors_exact_e${EPOCHS}}
STATUS=0
COMMON=(experiment=paper_lenet300 evaluate_unmasked=true "epochs=${EPOCHS}" "data.root=${DATA}" progress=never
        hydra/launcher=stacked "hydra.sweep.subdir=\${hydra:job.override_dirname}"
        "hydra.job.config.override_dirname.exclude_keys=[experiment,method,evaluate_unmasked,data.root,epochs,progress]")
COMMON+=("$@")
row() {  # row <name> <overrides...>
  local name=$1
  shift
  adrop train -m "seed=${SEEDS}" "$@" "hydra.sweep.dir=${SWEEP_DIR}/${name}" "${COMMON[@]}" || STATUS=1
}
row adaptive_dropout method=adaptive_dropout
row adaprox_authors_keep_rule method=adaprox method.params.authors_keep_rule=true
row adaprox_authors_code method=adaprox method.params.authors_keep_rule=true method.params.authors_validation_prox=true \
  schedule=linear_per_epoch
row adatikhonov_authors_alpha_clamp method=adatikhonov method.params.authors_alpha_clamp=true
row vardrop_lr_authors_clamp method=vardrop_lr method.params.authors_clamp=true
row vardrop_authors_clamp method=vardrop method.params.authors_clamp=true
row vardrop_lr_ar_authors_init method=vardrop_lr_ar method.params.authors_init=true
exit "${STATUS}"
