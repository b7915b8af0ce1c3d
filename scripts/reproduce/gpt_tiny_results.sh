#!/usr/bin/env bash
# The gpt_tiny results (docs/results/gpt_tiny.md): a character-level language model of Python's standard library
# source (scripts/reproduce/stdlib_corpus.py; the text is the Python version's: the page names it), 5 epochs.
#   DATA=data scripts/reproduce/gpt_tiny_results.sh  (a rerun continues: finished runs are replayed, not trained)
# 1. dense, seeds 0-2: the reference perplexity;
# 2. LogSum, AdaProx and magnitude pruning at one matched sparsity (10% of the weights), lam searched on seed 0 (the
#    validation perplexity bounded by max_val_error), then seeds 1 and 2 at its lam.
set -euo pipefail
DATA=${DATA:-${ADROP_DATA:-data}}  # the folder holding the corpus, stdlib.txt: DATA, else $ADROP_DATA, else data/
OUT=${OUT:-outputs/multirun/gpt_tiny}
CORPUS=${CORPUS:-${DATA}/stdlib.txt}
[ -e "${CORPUS}" ] || python scripts/reproduce/stdlib_corpus.py "${CORPUS}"
COMMON=(experiment=gpt_tiny_text "dataset.path=${CORPUS}" progress=never "$@")
adrop train -m method=dense seed=0,1,2 "hydra.sweep.dir=${OUT}/dense" "${COMMON[@]}"
adrop train -m hydra/sweeper=lam_search hydra.sweeper.target_nonzero=0.1 'hydra.sweeper.then_seeds=[1,2]' \
  hydra.sweeper.short_epochs=1 method=logsum,adaprox,magnitude_pruning "hydra.sweep.dir=${OUT}/matched_0.1" \
  "${COMMON[@]}" || true   # a method not brought to the target is named; the others' runs stand
