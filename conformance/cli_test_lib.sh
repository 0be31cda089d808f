# cli_test_lib.sh: helpers for the shell tests that drive the `vrl` binary, sourced by
# test_cli_errors.sh and test_eval_cli.sh. Sets tmp (removed on exit), passes, fails.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0

# expect_error NAME PATTERN CMD...: exit 1 (not a signal), exactly one stderr line matching PATTERN.
expect_error() {
  local name=$1 pattern=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if [ "$rc" -eq 1 ] && [ "$lines" -eq 1 ] && grep -q -- "$pattern" "$tmp/err"; then
    passes=$((passes + 1)); echo "ok   $name: $(cat "$tmp/err")"
  else
    fails=$((fails + 1)); echo "FAIL $name: exit $rc, $lines lines, expected /$pattern/:"; cat "$tmp/err"
  fi
}

# check NAME CMD...: the command succeeds.
check() {
  local name=$1; shift
  if "$@"; then passes=$((passes + 1)); echo "ok   $name"; else fails=$((fails + 1)); echo "FAIL $name"; fi
}

# finish: the plain closing line, and the exit status.
finish() {
  echo "$passes passed, $fails failed"
  [ "$fails" -eq 0 ]
}
