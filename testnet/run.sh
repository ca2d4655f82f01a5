#!/usr/bin/env bash
# testnet/run.sh [N] [DATA]: build ppboost, make keys, partition a dataset, start N owner processes and
# one data user on loopback, wait for the session, print accuracy and wall time. Everything it starts is
# killed on exit or Ctrl-C. Exit status is non-zero if the session fails.
#
# DATA: synthetic (default), adult, fashion, csv:PATH, a plain PATH to a CSV file (label column LABEL, or
# "label" unless a schema beside it names another), or idx:IMAGES,LABELS.
#
# Environment knobs: ROUNDS (default 3), H owners per round (default N/(ROUNDS+1), at least 1),
# LEARNER (stump | ncc | logreg), MECHANISM (pm | hm | duchi | laplace | none), EPS (5),
# SECURESUM (shamir | ring), SAMPLES per owner (80 for synthetic; otherwise 0: the owners share what the
# user and the test set leave), USER_SAMPLES (0: partition derives it from the data size: 1000 for
# synthetic, else 10%, at most 1000), HOLDOUT (test rows: a fraction or a row count; default 2000 rows for
# synthetic, else 0.2), TEST (a labelled CSV scored instead of a holdout), MISSING (error | skip | zero |
# mean: missing values in a CSV), LABEL (the CSV's label column), CATEGORICAL (comma-separated categorical
# columns of a CSV without a schema), PORT (user TCP port, default 40000 + random), TIMEOUT seconds (300),
# PRIVACY (ldp | distributed: the selected owners secure-sum their statistics with noise shares; needs H >= 3),
# FORCE=1 passes --force to the data user: it then runs a plan its forecast calls hopeless (without it the user
# refuses such a plan before announcing it, exit 2, and no owner spends).
# KEEP=1 keeps the work directory.
# Hooks for harnesses that place the processes (testnet/nat.sh): USER_IP (the address the user listens on and
# owners dial, default 127.0.0.1), WRAP (an executable run as `WRAP user CMD...` and `WRAP owner-I CMD...`
# that must exec CMD, e.g. in a network namespace), OWNER_LISTEN (default /ip4/127.0.0.1/tcp/0; empty: the
# owner's default), USER_ARGS and OWNER_ARGS (extra flags), ON_DONE (an executable run with the work
# directory after the session succeeded, while the owners still run; its failure fails the run).
set -euo pipefail

N=${1:-5}
DATA=${2:-synthetic}
ROUNDS=${ROUNDS:-3}
H=${H:-$(( N / (ROUNDS + 1) ))}
(( H >= 1 )) || H=1
LEARNER=${LEARNER:-stump}
MECHANISM=${MECHANISM:-pm}
EPS=${EPS:-5}
SECURESUM=${SECURESUM:-shamir}
PRIVACY=${PRIVACY:-ldp}
if [[ $DATA == synthetic ]]; then SAMPLES=${SAMPLES:-80}; else SAMPLES=${SAMPLES:-0}; fi
USER_SAMPLES=${USER_SAMPLES:-0}
HOLDOUT=${HOLDOUT:-}
TEST=${TEST:-}
MISSING=${MISSING:-error}
LABEL=${LABEL:-}
CATEGORICAL=${CATEGORICAL:-}
data_args=()
if [[ -n $LABEL ]]; then data_args+=(--label "$LABEL"); fi
if [[ -n $CATEGORICAL ]]; then data_args+=(--categorical "$CATEGORICAL"); fi
PORT=${PORT:-$(( 40000 + RANDOM % 20000 ))}
TIMEOUT=${TIMEOUT:-300}
USER_IP=${USER_IP:-127.0.0.1}
OWNER_LISTEN=${OWNER_LISTEN-/ip4/127.0.0.1/tcp/0}
read -r -a wrap_user <<<"${WRAP:+$WRAP user}"
read -r -a user_args <<<"${USER_ARGS:-}"
read -r -a owner_args <<<"${OWNER_ARGS:-}"
if [[ -n $OWNER_LISTEN ]]; then owner_args+=(--listen "$OWNER_LISTEN"); fi
if [[ ${FORCE:-0} == 1 ]]; then user_args+=(--force); fi

usage() { echo "testnet: $*" >&2; echo "usage: [ENV=...] testnet/run.sh [N] [DATA]  (see the comment at the top)" >&2; exit 2; }
[[ $N =~ ^[0-9]+$ ]] && (( N >= 1 )) || usage "N must be a positive number of owners, got '$N'"
case $LEARNER in stump|ncc|logreg) ;; *) usage "LEARNER must be stump, ncc or logreg, got '$LEARNER'" ;; esac
case $PRIVACY in ldp|distributed) ;; *) usage "PRIVACY must be ldp or distributed, got '$PRIVACY'" ;; esac
case $MECHANISM in pm|hm|duchi|laplace|none) ;; *) usage "MECHANISM must be pm, hm, duchi, laplace or none, got '$MECHANISM'" ;; esac
case $SECURESUM in shamir|ring) ;; *) usage "SECURESUM must be shamir or ring, got '$SECURESUM'" ;; esac
# A plain file path is a CSV file; make it absolute, the processes run elsewhere.
if [[ $DATA != *:* && -e $DATA ]]; then
  DATA="csv:$(cd "$(dirname "$DATA")" && pwd)/$(basename "$DATA")"
elif [[ $DATA == csv:* && -e ${DATA#csv:} ]]; then
  f=${DATA#csv:}
  DATA="csv:$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"
fi

. "$(dirname "$0")/lib.sh"
testnet_setup testnet "logs and data"

start=$(date +%s.%N)
echo "testnet: building ppboost"
(cd "$root" && go build -o "$work/ppboost" ./cmd/ppboost)
bin="$work/ppboost"

echo "testnet: partitioning $DATA among $N owners"
"$bin" partition --data "$DATA" --owners "$N" --samples-per-owner "$SAMPLES" --user-samples "$USER_SAMPLES" \
  ${HOLDOUT:+--holdout "$HOLDOUT"} ${TEST:+--test "$TEST"} --missing "$MISSING" "${data_args[@]}" --out "$work/data"

user_id=$("$bin" keygen --out "$work/user.key")
mkdir -p "$work/keys" "$work/state" "$work/logs"

# The user's default err_m comes from its validation data: the only sums are distributed privacy's.
sums="no secure sum (err_m from the user's validation data)"
if [[ $PRIVACY == distributed ]]; then sums="$SECURESUM share sums"; fi
echo "testnet: data user $user_id on tcp/$PORT; $ROUNDS rounds, $H owners per round, $LEARNER/$MECHANISM/$PRIVACY eps=$EPS, $sums"
"${wrap_user[@]}" "$bin" user --key "$work/user.key" --listen "/ip4/$USER_IP/tcp/$PORT" "${user_args[@]}" \
  --data "$work/data/validation.csv" --test "$work/data/test.csv" --schema "$work/data/schema.json" \
  --expect-owners "$N" --owners-per-round "$H" --rounds "$ROUNDS" --learner "$LEARNER" \
  --mechanism "$MECHANISM" --privacy "$PRIVACY" --eps "$EPS" --securesum "$SECURESUM" --model "$work/model.json" \
  --state "$work/state/user" --join-timeout "${TIMEOUT}s" >"$work/logs/user.log" 2>&1 &
user_pid=$!
pids+=("$user_pid")

# Owners dial the user at start: wait until it listens.
for _ in $(seq 1 100); do
  grep -q "data user running" "$work/logs/user.log" 2>/dev/null && break
  if ! kill -0 "$user_pid" 2>/dev/null; then
    # The user stopped before its node ran (e.g. it refused a hopeless plan: exit 2, nobody spent).
    cat "$work/logs/user.log" >&2
    rc=0; wait "$user_pid" || rc=$?
    exit $(( rc ? rc : 1 ))
  fi
  sleep 0.1
done
boot="/ip4/$USER_IP/tcp/$PORT/p2p/$user_id"
allow_none=""
[ "$MECHANISM" = none ] && allow_none="--allow-none"   # owners release exact shares only when told to
for i in $(seq 0 $((N - 1))); do
  f=$(printf '%03d' "$i")
  "$bin" keygen --out "$work/keys/owner-$f.key" >/dev/null
  read -r -a wrap_owner <<<"${WRAP:+$WRAP owner-$i}"
  "${wrap_owner[@]}" "$bin" owner --data "$work/data/owner-$f.csv" --schema "$work/data/schema.json" \
    --key "$work/keys/owner-$f.key" --bootstrap "$boot" --user "$user_id" "${owner_args[@]}" \
    --eps "$EPS" --budget "$EPS" --state "$work/state/owner-$f" $allow_none >"$work/logs/owner-$f.log" 2>&1 &
  pids+=("$!")
done

echo "testnet: $N owners started; waiting for the session (timeout ${TIMEOUT}s)"
deadline=$(( $(date +%s) + TIMEOUT ))
while kill -0 "$user_pid" 2>/dev/null; do
  if (( $(date +%s) > deadline )); then
    echo "testnet: timed out after ${TIMEOUT}s" >&2
    tail -n 20 "$work/logs/user.log" >&2
    exit 1
  fi
  sleep 0.2
done
set +e
wait "$user_pid"
rc=$?
set -e
cat "$work/logs/user.log"
end=$(date +%s.%N)
if (( rc == 3 )); then
  # Partial (README, Exit codes): the model holds the rounds accepted before the session stopped.
  echo "testnet: the session ended partial; the model keeps its accepted rounds" >&2
elif (( rc != 0 )); then
  echo "testnet: data user failed (exit $rc)" >&2
  exit "$rc"
fi
"$bin" predict --model "$work/model.json" --data "csv:$work/data/test.csv"
[[ -z ${ON_DONE:-} ]] || "$ON_DONE" "$work"
awk -v n="$N" -v s="$start" -v e="$end" 'BEGIN { printf "testnet: %d owners, wall time %.1fs\n", n, e - s }'
