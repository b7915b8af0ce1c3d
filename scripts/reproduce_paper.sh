#!/usr/bin/env bash
# Reproduce the paper's LeNet-300-100 comparison (its Figure 2 and Tables 4-5), plus MagnitudePruning and
# HardConcrete: one sweep with the paper's settings (experiment=paper_lenet300), then `adrop report` on it.
#
#   scripts/reproduce_paper.sh                      200 epochs, as the paper (hours on a CPU; about an hour on a GPU)
#   EPOCHS=40 DATA=../shared/data scripts/reproduce_paper.sh
#   SEEDS=0,1,2 LAUNCHER=joblib scripts/reproduce_paper.sh   (several seeds, jobs in parallel)
#
# A sweep that is interrupted can be continued: run the same command with SWEEP_DIR set to its folder; every job
# resumes from its last checkpoint and finished jobs are skipped.
set -euo pipefail
EPOCHS=${EPOCHS:-200}
SEEDS=${SEEDS:-0}
DATA=${DATA:-${ADROP_DATA:-data}}
SWEEP_DIR=${SWEEP_DIR:-outputs/multirun/paper_lenet300_e${EPOCHS}}
METHODS=vardrop_lr_ar,vardrop_lr,vardrop,eta_trick,adaprox,adatikhonov,logsum,magnitude_pruning,hard_concrete
EXTRA=()
if [ -n "${LAUNCHER:-}" ]; then EXTRA+=("hydra/launcher=${LAUNCHER}"); fi

adrop train -m experiment=paper_lenet300 "method=${METHODS}" "seed=${SEEDS}" "epochs=${EPOCHS}" \
  "data.root=${DATA}" "hydra.sweep.dir=${SWEEP_DIR}" "hydra.sweep.subdir=\${hydra:job.override_dirname}" \
  "hydra.job.config.override_dirname.exclude_keys=[experiment,data.root,epochs]" "${EXTRA[@]}"
adrop report "${SWEEP_DIR}"
