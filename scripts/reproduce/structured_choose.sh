#!/usr/bin/env bash
# structure=neuron on LeNet-300-100: short runs (EPOCHS, default 30; the lr decays to 0 over them) over a lam grid per
# method, each grid one stack (hydra/launcher=stacked), to choose each group form's lam for the 200-epoch runs
# (docs/results/structured.md says how). Magnitude pruning's grid is its final_sparsity (one stack of one each).
# Every run resumes from its checkpoint: rerun the same command.
#
#   DATA=../shared/data scripts/reproduce/structured_choose.sh
#   EPOCHS=1 DATA=../shared/data scripts/reproduce/structured_choose.sh data.train_limit=512  (a smoke test)
#   METHODS="logsum adaprox" OUT=outputs/structured_choose_lr1e-3 DATA=../shared/data \
#     scripts/reproduce/structured_choose.sh lr=1e-3
#                                                 (some methods only, another lr: extra overrides reach every sweep;
#                                                  ETA_GRID: the eta-hat methods' lams, default 3e-4,1e-3,3e-3,1e-2)
#
# Writes ${OUT} (default outputs/structured_choose)/<method>/<overrides>/ and ${OUT}/results.csv (adrop report).
set -euo pipefail
EPOCHS=${EPOCHS:-30}
DATA=${DATA:-${ADROP_DATA:-data}}
OUT=${OUT:-outputs/structured_choose}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
METHODS=${METHODS:-"adaprox logsum adatikhonov adaptive_dropout eta_trick hard_concrete vardrop_lr_ar vardrop_lr vardrop magnitude_pruning"}
STATUS=0
N=1.6666666666666667e-05  # 1 / 60000: VarDrop's and HardConcrete's lam (the KL's and L0's weight per example)

sweep() {  # method, then its grid (a Hydra sweep override)
  local method=$1; shift
  case " ${METHODS} " in *" ${method} "*) ;; *) return 0 ;; esac
  adrop train -m "method=${method}" structure=neuron "epochs=${EPOCHS}" "data.root=${DATA}" progress=never \
    hydra/launcher=stacked hydra.launcher.n_jobs=1 "hydra.sweep.dir=${OUT}/${method}" \
    "hydra.sweep.subdir=\${hydra:job.override_dirname}" \
    "hydra.job.config.override_dirname.exclude_keys=[method,structure,data.root,epochs,progress]" "$@" || STATUS=1
}

for method in adaprox logsum adatikhonov adaptive_dropout eta_trick; do
  sweep "${method}" "lam=${ETA_GRID:-3e-4,1e-3,3e-3,1e-2}" "${@:1}"
done
sweep hard_concrete "lam=$N,5e-5,1.6666666666666667e-04,5e-4" "${@:1}"
for method in vardrop_lr_ar vardrop_lr vardrop; do
  sweep "${method}" "lam=$N,1.6666666666666667e-04,1.6666666666666667e-03,1.6666666666666667e-02" "${@:1}"
done
sweep magnitude_pruning "method.params.final_sparsity=0.9,0.95,0.98,0.99" "${@:1}"
adrop report "${OUT}" --out "${OUT}/report.$(date +%Y%m%d-%H%M%S)" || STATUS=1
exit "${STATUS}"
