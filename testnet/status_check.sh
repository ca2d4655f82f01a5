#!/usr/bin/env bash
# testnet/status_check.sh: the status page in headless Chromium, on a real session.
#
# Builds ppboost, partitions dataset/testdata/fruit.csv among 6 owners, starts a data user with
# --status (3 rounds, one owner per round, mechanism none) and, before any owner runs, loads its page in
# `chromium --headless --dump-dom` and `--screenshot`: that page has no round, and the check
# (status/cmd/pagecheck: round-table rows in the DOM, the curve's SVG path, pixels of the curve colour in
# the plot area of the screenshot) must FAIL on it (negative control). Then the owners start (owner 0 with
# its own --status); once the user's /status.json reports the outcome, the page is loaded again and the
# check must pass with at least 3 rows; the owner's page must list its events. The data user lingers
# (--status-linger) until the checks are done, then gets SIGTERM and must exit 0. A seventh owner, which
# releases no noiseless shares, refuses the session: the user's page must list it with its reason. Last,
# status's TestChromiumRendersHostileTextAsText loads a page whose refusal reasons carry markup: it must
# show as text; and TestChromiumOutcomes renders a complete, a partial and a failed session's page: the badge
# is the outcome's kind (the partial page must not say failed), rounds kept of planned, the mode, ε per owner.
#
# Installs Debian's chromium with apt-get if it is missing. KEEP=1 keeps the work directory (screenshots
# in it); OUT=DIR copies the screenshots and DOMs there. About 30 s plus the build.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
testnet_setup status_check "logs, pages and screenshots"
fail() { echo "status_check: FAIL: $*" >&2; exit 1; }

if ! command -v chromium >/dev/null; then
  echo "status_check: installing chromium from Debian's packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

echo "status_check: building"
(cd "$root" && go build -o "$work/ppboost" ./cmd/ppboost && go build -o "$work/pagecheck" ./status/cmd/pagecheck)
bin="$work/ppboost"

# http_get URL-PATH PORT: the body of a GET on 127.0.0.1 (bash's /dev/tcp; no curl needed).
http_get() {
  local port=$1 path=$2
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$path" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}

# render URL NAME: NAME.html (the DOM after the page's script ran) and NAME.png (1100x1200).
render() {
  local url=$1 name=$2
  local flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --mute-audio
    --user-data-dir="$work/chromium" --window-size=1100,1200 --virtual-time-budget=3000)
  timeout 60 chromium "${flags[@]}" --dump-dom "$url" >"$work/$name.html" 2>>"$work/logs/chromium.log"
  timeout 60 chromium "${flags[@]}" --screenshot="$work/$name.png" "$url" >>"$work/logs/chromium.log" 2>&1
  [[ -s $work/$name.png ]] || fail "chromium wrote no screenshot of $url (see $work/logs/chromium.log)"
  if [[ -n ${OUT:-} ]]; then mkdir -p "$OUT" && cp "$work/$name.html" "$work/$name.png" "$OUT/"; fi
}

mkdir -p "$work/keys" "$work/state" "$work/logs"
"$bin" partition --data "$root/dataset/testdata/fruit.csv" --owners 6 --out "$work/data" >/dev/null
user_id=$("$bin" keygen --out "$work/user.key")
port=$(( 40000 + RANDOM % 20000 ))

# status_port LOG: the port a node's status page got (--status 127.0.0.1:0), from its "status page" log line.
status_port() {
  local p=""
  for _ in $(seq 1 100); do
    p=$(grep -o 'status page: url=http://127.0.0.1:[0-9]*/' "$1" 2>/dev/null | head -n 1 | sed 's/.*:\([0-9]*\)\/$/\1/')
    [[ -n $p ]] && { echo "$p"; return; }
    sleep 0.1
  done
  fail "no status page in $1"
}

# The check is about the page, not the learner: with one owner's ~35 rows per round, a later round's stump is often
# not significantly better than chance on the validation rows, and the session then ends partial (1 of 3 rounds;
# seen 1 run in 3). The config file turns the significance test off (it also plays `user --config` with flags
# overriding it).
echo '{"boost": {"significance": 0}}' >"$work/user.json"
"$bin" user --config "$work/user.json" --key "$work/user.key" --listen "/ip4/127.0.0.1/tcp/$port" --status 127.0.0.1:0 \
  --status-linger 120s --progress plain \
  --data "$work/data/validation.csv" --test "$work/data/test.csv" --schema "$work/data/schema.json" \
  --expect-owners 6 --owners-per-round 1 --rounds 3 --mechanism none --model "$work/model.json" \
  --state "$work/state/user" --join-timeout 120s >"$work/logs/user.out" 2>"$work/logs/user.log" &
user_pid=$!
pids+=("$user_pid")
for _ in $(seq 1 100); do
  grep -q "data user running" "$work/logs/user.log" 2>/dev/null && break
  kill -0 "$user_pid" 2>/dev/null || { cat "$work/logs/user.log" >&2; fail "the data user exited"; }
  sleep 0.1
done
sport=$(status_port "$work/logs/user.log")

# Negative control: the page of a session without rounds must fail the check.
render "http://127.0.0.1:$sport/" before
grep -q '"state":"joining"' <(http_get "$sport" /status.json) || fail "the user is not joining before the owners start"
if "$work/pagecheck" -rows 1 "$work/before.html" "$work/before.png" >"$work/before.check"; then
  fail "negative control: the page of a session without rounds passed the check"
fi
# Each part of the check fails on it on its own: no rows, no curve path, no curve pixels in the plot area.
grep -q "rows 0, curve points 0, plot [0-9]*x[0-9]*, curve pixels 0" "$work/before.check" ||
  fail "negative control: $(cat "$work/before.check")"
echo "status_check: negative control failed the check, as it must"

boot="/ip4/127.0.0.1/tcp/$port/p2p/$user_id"
cp "$work/data/owner-000.csv" "$work/data/owner-006.csv"   # the refusing owner's data (it never sends any)
# The refusing owner starts first, and the others once the data user has its refusal: the user lists the owners
# that would not join while it admits, and with six joiners it fixes the roster (and stops announcing) at once,
# so a refusal that comes later is another round's message to it (it was, in one run of three).
for i in 6 $(seq 0 5); do
  f=$(printf '%03d' "$i")
  extra=(--allow-none)
  (( i == 0 )) && extra+=(--status 127.0.0.1:0 --status-linger 120s)
  (( i == 6 )) && extra=()   # no --allow-none: it will not join a session of mechanism none
  "$bin" keygen --out "$work/keys/owner-$f.key" >/dev/null
  "$bin" owner --data "$work/data/owner-$f.csv" --schema "$work/data/schema.json" \
    --key "$work/keys/owner-$f.key" --listen /ip4/127.0.0.1/tcp/0 --bootstrap "$boot" --user "$user_id" \
    --eps 5 --budget 5 --state "$work/state/owner-$f" "${extra[@]}" >"$work/logs/owner-$f.log" 2>&1 &
  pids+=("$!")
  if (( i == 6 )); then
    deadline=$(( $(date +%s) + 60 ))
    until grep -q "owner will not join" "$work/logs/user.log"; do
      (( $(date +%s) < deadline )) || { tail -n 20 "$work/logs/owner-006.log" >&2; fail "the refusing owner's refusal did not reach the data user within 60 s"; }
      sleep 0.2
    done
  fi
done

oport=$(status_port "$work/logs/owner-000.log")
deadline=$(( $(date +%s) + 120 ))
until http_get "$sport" /status.json | grep -q '"outcome"'; do
  (( $(date +%s) < deadline )) || { tail -n 20 "$work/logs/user.log" >&2; fail "no outcome within 120 s"; }
  kill -0 "$user_pid" 2>/dev/null || { cat "$work/logs/user.log" >&2; fail "the data user exited before the check"; }
  sleep 0.5
done
http_get "$sport" /status.json >"$work/status.json"
grep -q '"outcome":"complete' "$work/status.json" || fail "outcome: $(cat "$work/status.json")"

render "http://127.0.0.1:$sport/" user
"$work/pagecheck" -rows 3 "$work/user.html" "$work/user.png" || fail "the data user's page"
grep -q '<tr class="event"' "$work/user.html" && fail "the data user's page shows owner events"
grep -q 'would not join</td><td class="text">[^<]*without noise' "$work/user.html" || fail "the refusing owner is not listed with its reason"

render "http://127.0.0.1:$oport/" owner
grep -q '<tr class="event"' "$work/owner.html" || fail "the owner's page lists no events"
grep -q '"role":"owner"' <(http_get "$oport" /status.json) || fail "the owner's status.json"

# The user lingers for the page; a signal ends the linger, and the finished session exits 0.
kill -TERM "$user_pid"
set +e
wait "$user_pid"
rc=$?
set -e
(( rc == 0 )) || { cat "$work/logs/user.log" >&2; fail "the data user exited $rc"; }
grep -q "^round 3/3: " "$work/logs/user.log" || fail "no progress line in the user's standard error"
(cd "$root" && PPBOOST_CHROMIUM=1 go test -count=1 -run '^TestChromium' ./status) || fail "hostile text or the outcome pages in Chromium"
echo "status_check: ok (user page: $("$work/pagecheck" -rows 3 "$work/user.html" "$work/user.png"))"
