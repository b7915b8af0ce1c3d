#!/usr/bin/env bash
# Every finished run under the folders given, exported as onnx (`adrop export --format onnx`) into a temporary folder:
# each export re-evaluates the run's test error from the exported network alone and is written only if it equals the
# run's (otherwise adrop export says so and exits 2). Prints one line per run; exits 1 if any export failed.
#
#   DATA=../shared/data scripts/export_all.sh outputs/structured_lenet5_e200
set -uo pipefail
DATA=${DATA:-${ADROP_DATA:-data}}
TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT
STATUS=0
N=0
while IFS= read -r run; do
  N=$((N + 1))
  printf '%s: ' "${run}"
  adrop export "${run}" --format onnx --data "${DATA}" --out "${TMP}/${N}.onnx" 2>&1 || STATUS=1
done < <(find "$@" -name summary.json -exec dirname {} \; | sort)
echo "${N} runs exported; $([ "${STATUS}" = 0 ] && echo "each reproduces its run's test error" || echo "some FAILED")"
exit "${STATUS}"
