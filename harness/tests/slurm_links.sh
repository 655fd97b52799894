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
#   - 4 nodes x 2 ranks, the collectives suite's all-reduce (fp32 sum, 64 KiB): its
#     inter_node/ cases (one rank of each node) are run without a fault, with node3's link at
#     10 Mbit/s, and without a fault again; `gauntlet compare` of one run a side says
#     NEW MUST NOT SHIP (exit 3) for the limited run naming collectives/inter_node slower,
#     and names no inter_node/ case or family for the second healthy run (A/A; where it
#     does, a third healthy run decides, as for the doctor's runs). Two ranks a
#     node because inter_node/ cases exist only then (with one rank per node the whole
#     communicator is the inter-node one and no such case is made, docs/suites.md); the
#     intra_node/ cases are not judged: two ranks of one node on a shared 2-core machine take
#     0.17 to 48 ms for the same 256 KiB (measured at that size), as the scheduler has it,
#     and one run a side flags that now and then.
#   - 8 nodes x 2 ranks, oversubscribed (a functional run: correctness, not speed): the
#     doctor completes with a valid report of 16 ranks on 8 nodes in 7 link rounds; the
#     collectives suite (all seven collectives, fp32 sum, 64 KiB, on the 16 ranks, the 8
#     nodes' first ranks and every node's pair) gives a valid report, every result passed,
#     0 wrong elements.
# A launch that crashes (Open MPI's SIGSEGV in MPI_Init, launch() below) is run again, up to
# 5 times, saying so. Exit 77 with the reason when no cluster can run here.
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

launch() { # launch NAME SRUN_ARGS...: exit code of `srun SRUN_ARGS`, its output in $tmp/NAME.out.
    # A launch that crashes (a rank's SIGSEGV: exit 139) is run again, up to 5 times, saying
    # so and showing how it ended; a fifth crash fails the case. One rank dies of SIGSEGV about
    # 2 s in, inside MPI_Init_thread: two cores show Open MPI 4.1.4's TCP BTL receive handler
    # (mca_btl_tcp.so) calling mca_btl_base_active_message_trigger[tag].cbfunc, NULL: a
    # fragment arrived for a tag with no callback yet, under opal_progress in ompi_mpi_init
    # (its node's other rank then reports the shared-memory set-up failing, open(2)
    # ENOENT). Nothing of gauntlet's has run yet. Seen in 5 of about 80 launches of the
    # collectives on 4 nodes x 2 ranks, 3 of 12 on 8 nodes x 2 ranks (twice in a row once),
    # and once in the 8-node doctor's; on 2026-11-29, beside a sanitizer build, 3 of 6
    # launches on 4 nodes (twice in a row), hence 5 tries.
    # --wait=20: without it the other ranks of a step whose rank crashed wait in MPI_Init
    # until the step's time limit (4 minutes, then exit 143; seen on the 4-node doctor); with
    # it they are ended 20 s after the first rank ended (the ranks of a healthy step end
    # within a second of each other). Not --kill-on-bad-exit: the doctor's exit 1 for an
    # outlier would end the other ranks too. The crash is recognised by srun's own line as
    # well as by 139.
    local name=$1 rc try
    shift
    for try in 1 2 3 4 5; do
        on timeout 280 srun --wait=20 "$@" >"$tmp/$name.out" 2>&1
        rc=$?
        [ "$rc" = 139 ] || grep -qE "^srun: error: [^ ]+: tasks? [0-9,-]+: Segmentation fault" \
            "$tmp/$name.out" || break
        { echo "note: $name exited $rc (try $try of 5); its output began:"; grep -v '^ *$' "$tmp/$name.out" | head -12; } >&2
    done
    echo "$rc"
}

# ---- 4 nodes, one link limited -------------------------------------------------
start 4
doctor4() { # doctor4 NAME: exit code of the doctor on the 4 nodes
    launch "$1" -N4 -n4 -t 4 "$g" doctor --quick --report "$tmp/$1.json"
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

# ---- 4 nodes x 2 ranks: the same fault in the collectives' inter_node/ cases --------
# 64 KiB all-reduces, one warm-up and one iteration a block, the default 5 rounds (one run
# a side needs the 5 rounds to judge: compare takes each round's block as a replicate, and
# with --rounds 1 its 5 blocks are too few and every metric is "ambiguous").
# Measured on the loaded 2-core machine under CTest's environment (mpi_yield_when_idle):
# healthy 2-5 s a run, an inter_node/ all-reduce 1.1-11 ms; node3 at 10 Mbit/s 35 s, about
# 320 ms (24-300x). Without yield_when_idle (the script by hand) healthy takes 15-17 s at
# 24-64 ms and the limit still makes it 5-13x. 10 Mbit/s so that it shows either way. Those
# figures are 256 KiB's; 64 KiB since 2026-11-29 (the limited run took 35 s of the full
# tier's time with 256 KiB, the bytes crossing the slow link each time).
coll4() { # coll4 NAME: exit code of the suite on 4 nodes x 2 ranks
    launch "$1" -N4 -n8 -t 3 "$g" run collectives --topologies 8 --colls allreduce --dtypes fp32 \
        --ops sum -b 64K -e 64K --iters 1 --warmup 1 --report "$tmp/$1.json"
}
inter_busbw() { # inter_busbw NAME: inter_node busbw (GB/s) out of place, in place
    json "$tmp/$1.json" "' '.join('%.4f' % x['metrics']['busbw_65536']['value'] for x in sorted(r['results'], key=lambda x: x['params']['in_place']) if x['case'] == 'inter_node/allreduce/fp32/sum')"
}
cmp4() { # cmp4 BASE NEW: compare's exit code, its output in $tmp/cmp_NEW.out
    "$g" compare "$tmp/$1.json" "$tmp/$2.json" >"$tmp/cmp_$2.out" 2>&1
    echo $?
}
t=$SECONDS
rc=$(coll4 coll_healthy)
t_healthy=$((SECONDS - t))
[ "$rc" = 0 ] && [ -n "$(inter_busbw coll_healthy 2>/dev/null)" ] &&
    ok "collectives on 4 nodes x 2 ranks, no fault: every check passed, inter_node/ busbw $(inter_busbw coll_healthy) GB/s (${t_healthy} s)" ||
    { fail "collectives on 4 nodes x 2 ranks, no fault: exit $rc, no inter_node/ result"; tail -5 "$tmp/coll_healthy.out"; }
bash "$cluster" link-rate node3 10mbit >/dev/null || fail "link-rate node3 10mbit failed"
t=$SECONDS
rc=$(coll4 coll_limited)
t_limited=$((SECONDS - t))
bash "$cluster" link-clear node3 >/dev/null
[ "$rc" = 0 ] && [ -n "$(inter_busbw coll_limited 2>/dev/null)" ] &&
    ok "collectives with node3's link at 10 Mbit/s: every check passed, inter_node/ busbw $(inter_busbw coll_limited) GB/s (${t_limited} s)" ||
    { fail "collectives with node3's link at 10 Mbit/s: exit $rc, no inter_node/ result"; tail -5 "$tmp/coll_limited.out"; }
rc=$(cmp4 coll_healthy coll_limited)
[ "$rc" = 3 ] && grep -q "NEW MUST NOT SHIP" "$tmp/cmp_coll_limited.out" &&
    grep -qE "^  SLOWER +collectives/inter_node" "$tmp/cmp_coll_limited.out" &&
    ok "compare healthy limited: exit 3, NEW MUST NOT SHIP, $(grep -m1 -E "^  SLOWER +collectives/inter_node" "$tmp/cmp_coll_limited.out" | sed 's/^ *//')" ||
    { fail "compare healthy limited: exit $rc, inter_node/ not named slower"; grep -E "SLOWER|^compare:" "$tmp/cmp_coll_limited.out" | head -8; }
t=$SECONDS
rc=$(coll4 coll_again)
t_again=$((SECONDS - t))
# A/A: the inter_node/ cases of a second run without the fault are not named slower. The
# verdict of the whole compare is printed, not judged (0, 3 or 4: one run a side on this
# loaded machine holds an estimated slowdown as undecided, inter_node/ too: +6% and +16%
# [-36%, +110%] in CI's full tier, which says it cannot tell, not that the link is slow):
# the 8-rank and intra_node/ cases (ranks time-sliced on 2 cores) were named slower in 4
# of 26 pairings of healthy runs by hand, +89 to +1270%; inter_node/ in none. One run a side on 8 ranks time-sliced on 2 cores
# named inter_node/ once in CI's full tier (+111%, beside another test): as with the
# doctor above, a second healthy run decides, and both naming inter_node/ fails
rc_cmp=$(cmp4 coll_healthy coll_again)
if [ "$rc" = 0 ] && grep -qE "^  SLOWER +collectives/inter_node" "$tmp/cmp_coll_again.out"; then
    echo "note: the A/A compare named inter_node/ once, a second healthy run decides:" \
        "$(grep -m1 -E "^  SLOWER +collectives/inter_node" "$tmp/cmp_coll_again.out" | sed 's/^ *//')"
    t=$SECONDS
    rc=$(coll4 coll_again)
    t_again=$((SECONDS - t))
    rc_cmp=$(cmp4 coll_healthy coll_again)
fi
[ "$rc" = 0 ] && { [ "$rc_cmp" = 0 ] || [ "$rc_cmp" = 3 ] || [ "$rc_cmp" = 4 ]; } &&
    ! grep -qE "^  SLOWER +collectives/inter_node" "$tmp/cmp_coll_again.out" &&
    ok "A/A, the limit removed: compare names no inter_node/ case slower (inter_node/ busbw $(inter_busbw coll_again) GB/s, ${t_again} s; compare exit $rc_cmp: $(grep -E "^compare:" "$tmp/cmp_coll_again.out" | sed 's/.*: //'))" ||
    { fail "A/A, the limit removed: run exit $rc, compare exit $rc_cmp"; grep -E "SLOWER|UNDECIDED|^compare:" "$tmp/cmp_coll_again.out" | head -8; }
[ "$rc_cmp" = 3 ] && echo "note: the A/A compare named: $(grep -E "^  SLOWER +collectives" "$tmp/cmp_coll_again.out" | sed 's/^ *//; s/:.*//' | paste -sd';')"

# ---- 8 nodes x 2 ranks: it works at that size ------------------------------------
start 8
rc=$(launch d8 -N8 -n16 -t 4 "$g" doctor --quick --report "$tmp/d8.json")
{ [ "$rc" = 0 ] || [ "$rc" = 1 ]; } && "$check" "$tmp/d8.json" >/dev/null &&
    [ "$(json "$tmp/d8.json" "(len(r['env']['job']['per_rank']), r['env']['job']['n_nodes'], r['doctor']['link_rounds'], r['doctor']['pairs_of'])")" = "(16, 8, 7, 'nodes')" ] &&
    ok "doctor on 8 nodes x 2 ranks: a valid report of 16 ranks on 8 nodes, 7 link rounds of node pairs (exit $rc)" ||
    { fail "doctor on 8 nodes x 2 ranks: exit $rc"; tail -5 "$tmp/d8.out"; }

t=$SECONDS
rc=$(launch c8 -N8 -n16 -t 3 "$g" run collectives --topologies 16 --dtypes fp32 --ops sum \
    -b 64K -e 64K --iters 1 --warmup 1 --rounds 1 --reps 1 --report "$tmp/c8.json")
t_c8=$((SECONDS - t))
[ "$rc" = 0 ] && "$check" "$tmp/c8.json" >/dev/null &&
    [ "$(json "$tmp/c8.json" "(len(r['results']), all(x['status'] == 'pass' for x in r['results']), int(sum(c['value'] for x in r['results'] for c in x['checks'] if c['name'] == 'wrong_elements')), sorted(set((x['params'].get('comm_scope', 'all'), x['topology']) for x in r['results'])))")" = "(33, True, 0, [('all', '16'), ('inter_node', '8'), ('intra_node', '2')])" ] &&
    ok "collectives on 8 nodes x 2 ranks: a valid report, 33 results passed (16 ranks, 8 nodes' first ranks, a node's pair), 0 wrong elements (${t_c8} s)" ||
    { fail "collectives on 8 nodes x 2 ranks: exit $rc, $(json "$tmp/c8.json" "(len(r['results']), [x['case'] for x in r['results'] if x['status'] != 'pass'])" 2>/dev/null)"; tail -5 "$tmp/c8.out"; }
echo "timings: collectives on 4 nodes healthy ${t_healthy} s, limited ${t_limited} s, A/A ${t_again} s; on 8 nodes ${t_c8} s"

[ "$fails" -eq 0 ] && echo "slurm links: all passed" || echo "slurm links: $fails failed"
[ "$fails" -eq 0 ]
