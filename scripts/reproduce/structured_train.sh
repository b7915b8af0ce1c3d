#!/usr/bin/env bash
# structure=neuron at 200 epochs (docs/results/structured.md): for each method given, its lam grid as one stack
# (hydra/launcher=stacked) and seed(s) SEEDS (default 0); magnitude pruning's grid is its final_sparsity per layer (a
# stack of one each). MODEL: lenet_300_100 (default) or lenet5 (LeNet-5-Caffe), on MNIST, Adam, batch 128. The eta-hat
# methods and adaptive dropout train at lr 1e-3 (30-epoch runs at the paper's 1e-4 erred 3.3% or more wherever they
# pruned: scripts/reproduce/structured_choose.sh). Every run resumes from its checkpoint: rerun the same command.
#
#   scripts/reproduce/structured_train.sh adaprox logsum ...  (the grids, seed 0)
#   SEEDS=1,2 GRID_adaprox=1e-4 scripts/reproduce/structured_train.sh adaprox  (more seeds, one lam)
#   MODEL=lenet5 EPOCHS=30 GRID_adaprox=1e-4,3e-4 scripts/reproduce/structured_train.sh adaprox
#   EPOCHS=1 scripts/reproduce/structured_train.sh adaprox -- data.train_limit=512  (a smoke test)
#
# Writes ${OUT} (default outputs/structured_lenet300, or outputs/structured_${MODEL}_e${EPOCHS} for another model)
# /<method>/<overrides>/.
set -euo pipefail
EPOCHS=${EPOCHS:-200}
SEEDS=${SEEDS:-0}
DATA=${DATA:-${ADROP_DATA:-data}}  # MNIST's root (the folder holding MNIST/raw/): DATA, else $ADROP_DATA, else data/
MODEL=${MODEL:-lenet_300_100}
if [ "${MODEL}" = lenet_300_100 ]; then DEFAULT_OUT=outputs/structured_lenet300; else DEFAULT_OUT=outputs/structured_${MODEL}_e${EPOCHS}; fi
OUT=${OUT:-${DEFAULT_OUT}}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# each method's grid (conf/grid/); GRID_<method>=<lams> runs those instead
declare -A GRID=([adaprox]=structured_train_eta_hat [logsum]=structured_train_eta_hat
                 [adatikhonov]=structured_train_eta_hat [adaptive_dropout]=structured_train_eta_hat
                 [eta_trick]=structured_train_eta_trick [hard_concrete]=structured_train_hard_concrete
                 [vardrop_lr_ar]=structured_vardrop [vardrop_lr]=structured_vardrop [vardrop]=structured_vardrop
                 [magnitude_pruning]=structured_train_pruning)
declare -A LR=([adaprox]=1e-3 [logsum]=1e-3 [adatikhonov]=1e-3 [adaptive_dropout]=1e-3)
METHODS=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do METHODS+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
STATUS=0
for method in "${METHODS[@]}"; do
  override="GRID_${method}"
  swept=("grid=${GRID[$method]:?unknown method $method}")
  if [ -n "${!override:-}" ]; then  # the lams (magnitude pruning: the final_sparsity values) given instead
    if [ "${method}" = magnitude_pruning ]; then swept+=("method.params.final_sparsity=${!override}"); else swept+=("lam=${!override}"); fi
  fi
  if [ "${method}" = magnitude_pruning ]; then swept+=(method.params.scope=layer); fi
  lr=()
  if [ -n "${LR[$method]:-}" ]; then lr=("lr=${LR[$method]}"); fi
  adrop train -m "method=${method}" "model=${MODEL}" structure=neuron "epochs=${EPOCHS}" "seed=${SEEDS}" "data.root=${DATA}" \
    progress=never "${swept[@]}" "${lr[@]}" hydra/launcher=stacked hydra.launcher.n_jobs=1 \
    "hydra.sweep.dir=${OUT}/${method}" "hydra.sweep.subdir=\${hydra:job.override_dirname}" \
    "hydra.job.config.override_dirname.exclude_keys=[method,model,structure,data.root,epochs,progress,device,grid]" "$@" || STATUS=1
done
exit "${STATUS}"
