#!/usr/bin/env bash
# Runs `make test`'s suites in lanes: the suites of a lane one after another, the lanes at the same
# time. Every suite runs even when one before it failed (they are independent; one run tells all). The suites that wait (real minute slots, cluster
# starts, helm --wait) overlap with those that compute; see docs/development.md "Measured".
#
#   scripts/test-lanes.sh LOGDIR 'suite suite ...|suite ...|...'
#
# Each suite is `make SUITE`, its output in LOGDIR/SUITE.log. One line per start and end goes to
# stdout; a failed suite's whole log is printed at the end (each line prefixed with [SUITE]), then
# every suite's time, then each failed suite's failing tests again (a tail keeps them). Exit status: 0 when every suite passed.
#
# NICE_SUITES (space-separated) run under `nice -n 10`: the suites that only compute yield the
# cores to those that keep time (kind nodes probing the manager, Jobs due at a minute slot).
set -uo pipefail
# The body is one compound command, read whole before it runs: bash reads a script as it goes, and
# a checkout that changes this file during a run would otherwise run half of each version.
{
logs=$1 spec=$2
mkdir -p "$logs"
IFS='|' read -r -a lanes <<<"$spec"
results=$logs/results
: >"$results"
say() { printf '[lanes %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

lane() {
  local s start rc nice
  for s in $1; do
    start=$SECONDS
    say "$s: started (log $logs/$s.log)"
    nice=()
    case " ${NICE_SUITES:-} " in *" $s "*) nice=(nice -n 10) ;; esac
    "${nice[@]}" make --no-print-directory "$s" >"$logs/$s.log" 2>&1 </dev/null
    rc=$?
    if [ $rc = 0 ]; then say "$s: passed in $((SECONDS - start)) s"; else say "$s: FAILED (exit $rc) in $((SECONDS - start)) s"; fi
    echo "$s $rc $((SECONDS - start))" >>"$results"
  done
}

# Each lane its own process group (job control): an interrupt stops every suite, its make and tests.
set -m
pids=()
stop() { local p; for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done; }
trap 'say "interrupted: stopping the lanes"; stop; wait; exit 130' INT TERM
total=$SECONDS
for l in "${lanes[@]}"; do
  lane "$l" &
  pids+=($!)
done
wait
set +m

failed=0
for l in "${lanes[@]}"; do
  for s in $l; do
    read -r _ rc secs < <(grep "^$s " "$results") || { say "$s: no result"; failed=1; continue; }
    [ "$rc" = 0 ] && continue
    failed=1
    echo "----- $s failed (exit $rc, $secs s); its log ($logs/$s.log): -----"
    sed "s/^/[$s] /" "$logs/$s.log"
    echo "----- end of $s -----"
  done
done
echo "suite times (lanes run at the same time; wall clock $((SECONDS - total)) s):"
for l in "${lanes[@]}"; do
  line="  lane:"
  for s in $l; do
    if read -r _ rc secs < <(grep "^$s " "$results"); then
      line+=" $s $secs s$([ "$rc" = 0 ] || echo ' FAILED'),"
    else
      line+=" $s no result,"
    fi
  done
  echo "${line%,}"
done
# Last, so a CI that keeps only the tail of the output still names what failed: each failed
# suite's failing tests and panics, with the lines before them.
for l in "${lanes[@]}"; do
  for s in $l; do
    read -r _ rc _ < <(grep "^$s " "$results") || continue
    [ "$rc" = 0 ] && continue
    echo "----- $s: what failed -----"
    grep -E -B6 -- '--- FAIL|^panic:|^FAIL[[:space:]]|timed out' "$logs/$s.log" | tail -n 60 | sed "s/^/[$s] /"
  done
done
exit $failed
}
