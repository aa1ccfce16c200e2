#!/usr/bin/env bash
# phase.sh NAME CMD...: runs CMD and prints how long it took, whether it passed or failed.
name="$1"; shift
start=$(date +%s)
printf '\n==> phase %s\n' "${name}"
"$@"
rc=$?
printf '==> phase %s: %s in %ss\n' "${name}" "$([[ ${rc} == 0 ]] && echo ok || echo "FAILED (exit ${rc})")" "$(($(date +%s) - start))"
exit "${rc}"
