#!/usr/bin/env bash
# usage: slurm_links.sh GAUNTLET REPORT_CHECK
# A real bad link, and more nodes than two, on test clusters of ci/slurm/cluster.sh of their
# own (an instance named after this build, not the fixture's two-node one; docs/doctor.md,
# "A slow link"):
#   - 4 nodes: `gauntlet doctor --quick` names nothing; with node3's link rate-limited both
#     ways (cluster.sh link-rate: tc tbf on its veth pair) it names node3 for its link
#     bandwidth and names nothing that does not involve node3; with the limit removed,
#     nothing again. A run without a fault may be taken twice: four nodes' daemons and
#     ranks on 2 cores leave a single link slow in both of the doctor's looks now and then.
#   - 8 nodes x 2 ranks, oversubscribed (a functional run: correctness, not speed): the
#     doctor completes with a valid report of 16 ranks on 8 nodes in 7 link rounds.
# Exit 77 with the reason when no cluster can run here.
set -u
g=$1
check=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
cluster="$root/ci/slurm/cluster.sh"
. "$(dirname "$0")/lib.sh"
why=$(bash "$cluster" check) || { echo "skipped: $why"; exit 77; }
command -v python3 >/dev/null || { echo "skipped: no python3 to read the reports"; exit 77; }
command -v tc >/dev/null || { echo "skipped: no tc (iproute2) to limit a link"; exit 77; }
tmp=$(mktemp -d)
chmod 755 "$tmp" # the nodes' slurmd run the job steps as root, but keep it readable
# an instance of its own: the fixture's is named after the build (GT_SLURM_INSTANCE)
base=${GT_SLURM_INSTANCE:-dev}
export GT_SLURM_INSTANCE=lk$(printf '%s' "$base" | cksum | cut -c1-6)
unset GT_SLURM_DIR GT_SLURM_SUBNET
stop() { bash "$cluster" stop >/dev/null 2>&1; }
trap 'stop; rm -rf "$tmp"' EXIT
on() { bash "$cluster" exec "$@"; }
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
outliers() { json "$1" "sorted((o['probe'], o['host'], o.get('peer_host') or '') for o in r['doctor']['outliers'])"; }

start() {
    stop
    GT_SLURM_NODES=$1 bash "$cluster" start >"$tmp/start$1.log" 2>&1 ||
        { cat "$tmp/start$1.log"; fail "a cluster of $1 nodes did not start"; exit 1; }
}

# ---- 4 nodes, one link limited -------------------------------------------------
start 4
doctor4() { # doctor4 NAME: exit code of the doctor on the 4 nodes
    on timeout 280 srun -N4 -n4 -t 4 "$g" doctor --quick --report "$tmp/$1.json" >"$tmp/$1.out" 2>&1
    echo $?
}
rc=$(doctor4 healthy)
[ "$rc" = 0 ] || rc=$(doctor4 healthy)
[ "$rc" = 0 ] && [ "$(outliers "$tmp/healthy.json")" = "[]" ] &&
    ok "4 nodes, no fault: nothing named" ||
    { fail "4 nodes, no fault: exit $rc, named $(outliers "$tmp/healthy.json" 2>/dev/null)"; grep -E "OUTLIER|rror" "$tmp/healthy.out" | head -5; }

bash "$cluster" link-rate node3 100mbit >/dev/null || fail "link-rate node3 failed"
rc=$(doctor4 slowlink)
named=$(outliers "$tmp/slowlink.json" 2>/dev/null)
[ "$rc" = 1 ] && json "$tmp/slowlink.json" "any(o['probe'] == 'link_bandwidth' and o['host'] == 'node3' and o['scope'] == 'rank' for o in r['doctor']['outliers']) and all('node3' in (o['host'], o.get('peer_host')) for o in r['doctor']['outliers'])" | grep -q True &&
    ok "node3's link at 100 Mbit/s: node3 named for its link bandwidth, nothing without node3 ($named)" ||
    { fail "node3's link at 100 Mbit/s: exit $rc, named $named"; grep -E "OUTLIER|rror" "$tmp/slowlink.out" | head -5; }
grep -q "OUTLIER host node3, rank 2: link bandwidth" "$tmp/slowlink.out" &&
    ok "the console names node3's link bandwidth" || fail "the console does not name node3's link bandwidth"
bash "$cluster" link-clear node3 >/dev/null
rc=$(doctor4 cleared)
[ "$rc" = 0 ] || rc=$(doctor4 cleared)
[ "$rc" = 0 ] && [ "$(outliers "$tmp/cleared.json")" = "[]" ] &&
    ok "the limit removed: nothing named" ||
    { fail "the limit removed: exit $rc, named $(outliers "$tmp/cleared.json" 2>/dev/null)"; grep -E "OUTLIER|rror" "$tmp/cleared.out" | head -5; }

# ---- 8 nodes x 2 ranks: it works at that size ------------------------------------
start 8
on timeout 280 srun -N8 -n16 -t 4 "$g" doctor --quick --report "$tmp/d8.json" >"$tmp/d8.out" 2>&1
rc=$?
{ [ "$rc" = 0 ] || [ "$rc" = 1 ]; } && "$check" "$tmp/d8.json" >/dev/null &&
    [ "$(json "$tmp/d8.json" "(len(r['env']['job']['per_rank']), r['env']['job']['n_nodes'], r['doctor']['link_rounds'], r['doctor']['pairs_of'])")" = "(16, 8, 7, 'nodes')" ] &&
    ok "doctor on 8 nodes x 2 ranks: a valid report of 16 ranks on 8 nodes, 7 link rounds of node pairs (exit $rc)" ||
    { fail "doctor on 8 nodes x 2 ranks: exit $rc"; tail -5 "$tmp/d8.out"; }

[ "$fails" -eq 0 ] && echo "slurm links: all passed" || echo "slurm links: $fails failed"
[ "$fails" -eq 0 ]
