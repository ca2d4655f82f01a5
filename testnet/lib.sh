# testnet/lib.sh is sourced by the testnet scripts (run.sh, threesystems.sh, status_check.sh).
#
# testnet_setup NAME [WHAT]: sets root (the repository), work (a fresh temporary directory) and pids (the
# processes the script starts; append to it), and installs the traps: on exit every process in pids is
# ended and waited for, and work is removed, or kept (and named, as "NAME: WHAT kept in DIR") when KEEP=1 or
# the script failed. WHAT defaults to "logs and data".
testnet_setup() {
  _tn_name=$1
  _tn_what=${2:-logs and data}
  root=$(cd "$(dirname "${BASH_SOURCE[1]}")/.." && pwd)
  work=$(mktemp -d "${TMPDIR:-/tmp}/ppboost-$_tn_name.XXXXXX")
  pids=()
  trap _testnet_cleanup EXIT
  trap 'exit 130' INT TERM
}

_testnet_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ ${KEEP:-0} == 1 || $rc != 0 ]]; then
    echo "$_tn_name: $_tn_what kept in $work" >&2
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
