#!/usr/bin/env bash
# structure=neuron on LeNet-300-100: short runs (EPOCHS, default 30; the lr decays to 0 over them) over a lam grid per
# method, each grid one stack (hydra/launcher=stacked), to choose each group form's lam for the 200-epoch runs
# (docs/results/structured.md says how). Magnitude pruning's grid is its final_sparsity (one stack of one each).
# Every run resumes from its checkpoint: rerun the same command.
#
#   scripts/reproduce/structured_choose.sh
#   EPOCHS=1 scripts/reproduce/structured_choose.sh data.train_limit=512  (a smoke test)
#   METHODS="logsum adaprox" OUT=outputs/structured_choose_lr1e-3 \
#     scripts/reproduce/structured_choose.sh lr=1e-3
#                                                 (some methods only, another lr: extra overrides reach every sweep;
#                                                  ETA_GRID: the eta-hat methods' lams instead of their grid's)
# The grids are Hydra configs, conf/grid/structured_choose_*.yaml and structured_vardrop.yaml.
#
# Writes ${OUT} (default outputs/structured_choose)/<method>/<overrides>/ and ${OUT}/results.csv (adrop report).
set -euo pipefail
EPOCHS=${EPOCHS:-30}
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
OUT=${OUT:-outputs/structured_choose}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
METHODS=${METHODS:-"adaprox logsum adatikhonov adaptive_dropout eta_trick hard_concrete vardrop_lr_ar vardrop_lr vardrop magnitude_pruning"}
STATUS=0

sweep() {  # method, then its grid (conf/grid/<name>.yaml, or a Hydra sweep override)
  local method=$1; shift
  case " ${METHODS} " in *" ${method} "*) ;; *) return 0 ;; esac
  adrop train -m "method=${method}" structure=neuron "epochs=${EPOCHS}" "data.root=${DATA}" progress=never \
    hydra/launcher=stacked hydra.launcher.n_jobs=1 "hydra.sweep.dir=${OUT}/${method}" \
    "hydra.sweep.subdir=\${hydra:job.override_dirname}" \
    "hydra.job.config.override_dirname.exclude_keys=[method,structure,data.root,epochs,progress,grid]" "$@" || STATUS=1
}

for method in adaprox logsum adatikhonov adaptive_dropout eta_trick; do
  sweep "${method}" grid=structured_choose_eta_hat ${ETA_GRID:+"lam=${ETA_GRID}"} "${@:1}"
done
sweep hard_concrete grid=structured_choose_hard_concrete "${@:1}"
for method in vardrop_lr_ar vardrop_lr vardrop; do
  sweep "${method}" grid=structured_vardrop "${@:1}"
done
sweep magnitude_pruning grid=structured_choose_pruning "${@:1}"
adrop report "${OUT}" --out "${OUT}/report.$(date +%Y%m%d-%H%M%S)" || STATUS=1
exit "${STATUS}"
