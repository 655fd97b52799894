#!/usr/bin/env bash
# A two-node Slurm cluster on this machine, for the slurm-labelled tests and for developers
# (docs/clusters.md). As root, with Debian's slurm-wlm and munge (ci/deps.sh):
#
#   ci/slurm/cluster.sh start           # munged, slurmctld, slurmd on node1 and node2
#   GT_SLURM_NODES=4 ci/slurm/cluster.sh start   # node1 .. node4
#   ci/slurm/cluster.sh exec srun -N2 -n2 build/harness/gauntlet run collectives --quick
#   ci/slurm/cluster.sh exec bash       # a shell where srun, sbatch, sinfo ... reach it
#   ci/slurm/cluster.sh status          # what runs (exit 0 all up, 3 nothing, 1 partly)
#   ci/slurm/cluster.sh stop            # everything ended by PID, namespaces gone
#   ci/slurm/cluster.sh check           # exit 0 when a cluster can run here, else 77 and why
#   ci/slurm/cluster.sh node-kill node2  # SIGKILL that node's slurmd (a crashed daemon: its
#                                        # job steps run on until the controller gives up)
#   ci/slurm/cluster.sh node-start node2 # start that node's slurmd again (back to idle)
#   ci/slurm/cluster.sh link-rate node3 100mbit  # that node's link rate-limited both ways
#                                        # (tc tbf on both ends of its veth pair)
#   ci/slurm/cluster.sh link-clear node3 # the limit removed
#
# Three network namespaces: one holds a bridge and the controller side (munged, slurmctld, and
# the clients `exec` runs), the other two one node each (slurmd in its own UTS namespace, host
# name node1 / node2), joined to the bridge by veth pairs. No default route anywhere: every
# packet stays between these namespaces. Every Slurm command runs with SLURM_CONF exported
# (without it a Slurm client looks its controller up through DNS), and every process the
# script starts sees the instance's /etc/hosts (a private mount namespace): no look-up of a
# cluster host goes to DNS.
#
# Instances: GT_SLURM_INSTANCE (default "dev"; letters and digits, at most 8) names the
# namespaces (gts-<instance>-ctl, -node1, -node2) and the state directory, and picks the subnet
# and ports, so that a test run's cluster and a developer's never meet. The tests use an
# instance named after their build directory. Also read:
#   GT_SLURM_DIR     the state directory (default /tmp/gauntlet-slurm-<instance>): slurm.conf,
#                    munge key and socket, pid files, logs, spool; removed by stop
#   GT_SLURM_SUBNET  the first three octets of the bridge's /24 (default 10.77.N, N from the
#                    instance's name; two instances may share it, each in its own namespaces)
#   GT_SLURM_CPUS    CPUs each node declares (default nproc; more than the machine has
#                    leaves the nodes INVAL and start fails)
#   GT_SLURM_TIMEOUT seconds start waits for every node to be idle (default 30)
#   GT_SLURM_NODES   how many nodes start brings up (default 2, at most 16); the other
#                    commands read the count the instance was started with
#
# Exit codes: 0 done; 1 failed (start leaves nothing running behind it and prints the
# daemons' logs); 2 usage; 3 status: nothing of this instance runs; 77 check: cannot run here.
set -uo pipefail

die() { echo "cluster.sh: $*" >&2; exit "${rc_die:-1}"; }
usage() { # the header above, on stdout
    sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
}

cmd=${1:-}
[ $# -gt 0 ] && shift

inst=${GT_SLURM_INSTANCE:-dev}
[[ "$inst" =~ ^[A-Za-z0-9]{1,8}$ ]] ||
    rc_die=2 die "GT_SLURM_INSTANCE='$inst': use 1 to 8 letters or digits"
dir=${GT_SLURM_DIR:-/tmp/gauntlet-slurm-$inst}
[[ "$dir" = /* ]] || rc_die=2 die "GT_SLURM_DIR='$dir' must be an absolute path"
sum=$(printf '%s' "$inst" | cksum | cut -d' ' -f1)
subnet=${GT_SLURM_SUBNET:-10.77.$((sum % 250 + 1))}
[[ "$subnet" =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] ||
    rc_die=2 die "GT_SLURM_SUBNET='$subnet': give three octets, e.g. 10.77.5"
cpus=${GT_SLURM_CPUS:-$(nproc)}
[[ "$cpus" =~ ^[1-9][0-9]*$ ]] || rc_die=2 die "GT_SLURM_CPUS='$cpus' is not a count"
wait_s=${GT_SLURM_TIMEOUT:-30}
[[ "$wait_s" =~ ^[1-9][0-9]*$ ]] || rc_die=2 die "GT_SLURM_TIMEOUT='$wait_s' is not seconds"
port=$((20000 + (sum % 4000) * 10)) # slurmctld; slurmd +1; srun +2..+9

ns_ctl=gts-$inst-ctl
# the node count: the running instance's, else GT_SLURM_NODES
nnodes=${GT_SLURM_NODES:-2}
[ "$cmd" != start ] && [ -s "$dir/nodes" ] && nnodes=$(cat "$dir/nodes")
[[ "$nnodes" =~ ^[0-9]+$ ]] && [ "$nnodes" -ge 2 ] && [ "$nnodes" -le 16 ] ||
    rc_die=2 die "GT_SLURM_NODES='$nnodes': give 2 to 16 nodes"
nodes=()
for ((i = 1; i <= nnodes; i++)); do nodes+=("node$i"); done
ns_node() { echo "gts-$inst-$1"; }
all_ns=("$ns_ctl")
for n in "${nodes[@]}"; do all_ns+=("$(ns_node "$n")"); done
ctl_ip=$subnet.1
node_ip() { echo "$subnet.$((10 + ${1#node}))"; } # node1 -> .11, node2 -> .12
conf=$dir/slurm.conf
export SLURM_CONF=$conf
# Open MPI between the nodes: TCP on the bridge's subnet (there is no other network there)
mpi_env=(OMPI_MCA_btl_tcp_if_include="$subnet.0/24" OMPI_MCA_oob_tcp_if_include="$subnet.0/24")

in_ns() { # in_ns NAMESPACE CMD...: nsenter, not `ip netns exec` (that remounts /sys and
    # slurmd's cgroup plugin then finds no /sys/fs/cgroup); in a mount namespace of its own
    # where /etc/hosts is the instance's (every name and address of the cluster answered
    # from it: no host-name look-up goes to DNS)
    local ns=$1
    shift
    if [ -f "$dir/hosts" ]; then
        nsenter --net="/run/netns/$ns" -- unshare --mount --propagation private -- \
            sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$dir/hosts" "$@"
    else
        nsenter --net="/run/netns/$ns" -- "$@"
    fi
}
# a process that has exited but not been reaped yet (a zombie: kill -0 still
# succeeds; this machine's init may take a while to reap daemons) is not alive
alive() {
    [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null &&
        ! grep -qs '^State:[[:space:]]*Z' "/proc/$1/status"
}
pid_of() { # PIDFILE: the daemon's pid, only while that pid is still the daemon the file
    # names (a stale file whose pid now belongs to another process gives nothing)
    local p name
    [ -s "$1" ] || return 0
    p=$(head -n 1 "$1" | tr -dc '0-9')
    name=$(basename "$1" .pid)
    name=${name%%-*} # slurmd-node1 -> slurmd
    [ -n "$p" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$name" ] && echo "$p"
    return 0
}
pidfiles() {
    local n
    echo "$dir/run/slurmctld.pid"
    for n in "${nodes[@]}"; do echo "$dir/run/slurmd-$n.pid"; done
    echo "$dir/munge/munged.pid"
}
ns_exists() { [ -e "/run/netns/$1" ]; }

# why a cluster cannot run here ("" when it can)
why_not() {
    [ "$(id -u)" -eq 0 ] || { echo "not root (network namespaces and the daemons need root)"; return; }
    local c
    for c in ip nsenter unshare runuser munged slurmctld slurmd srun sbatch sinfo squeue scancel scontrol; do
        command -v "$c" >/dev/null 2>&1 ||
            { echo "no '$c' (install slurm-wlm and munge: ci/deps.sh as root)"; return; }
    done
    [ -d "$(slurm_plugin_dir)" ] && [ -e "$(slurm_plugin_dir)/mpi_pmix.so" ] ||
        { echo "Slurm has no PMIx plugin (mpi_pmix.so)"; return; }
    unshare --uts true 2>/dev/null || { echo "cannot create a UTS namespace (unshare --uts)"; return; }
    unshare --mount --propagation private true 2>/dev/null ||
        { echo "cannot create a mount namespace (unshare --mount)"; return; }
    local probe="gts-$inst-probe$$"
    ip netns add "$probe" 2>/dev/null || { echo "cannot create a network namespace (ip netns add)"; return; }
    ip netns del "$probe" 2>/dev/null
}
slurm_plugin_dir() {
    local d
    for d in /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib/*/slurm-wlm /usr/lib64/slurm /usr/lib/slurm; do
        [ -e "$d/mpi_pmix.so" ] && { echo "$d"; return; }
    done
    echo /nonexistent
}

running_pieces() { # prints what of this instance is there, one per line
    local f p ns
    for f in $(pidfiles); do
        p=$(pid_of "$f")
        alive "$p" && echo "$(basename "$f" .pid) (pid $p)"
    done
    for ns in "${all_ns[@]}"; do ns_exists "$ns" && echo "namespace $ns"; done
}

write_conf() {
    local n
    {
        echo "# gauntlet's test cluster of ${#nodes[@]} nodes, instance $inst (ci/slurm/cluster.sh)"
        echo "ClusterName=gts$inst"
        echo "SlurmctldHost=$(hostname)($ctl_ip)"
        echo "SlurmctldPort=$port"
        echo "SlurmdPort=$((port + 1))"
        echo "SrunPortRange=$((port + 2))-$((port + 9))"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        echo "AuthInfo=socket=$dir/munge/munge.socket"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "StateSaveLocation=$dir/state"
        echo "SlurmdSpoolDir=$dir/spool/%n"
        # one per node: PMIx's directories live there and would collide
        echo "TmpFS=$dir/tmp/%n"
        echo "SlurmctldPidFile=$dir/run/slurmctld.pid"
        echo "SlurmdPidFile=$dir/run/slurmd-%n.pid"
        echo "SlurmctldLogFile=$dir/log/slurmctld.log"
        echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
        echo "SlurmctldDebug=info"
        echo "SlurmdDebug=info"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core"
        echo "MpiDefault=pmix"
        echo "ReturnToService=2"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "SchedulerType=sched/backfill"
        echo "MailProg=/bin/true"
        # a job on a node whose slurmd is gone ends within ~15 s rather than five minutes
        echo "SlurmdTimeout=10"
        echo "InactiveLimit=0"
        echo "KillWait=5"
        for n in "${nodes[@]}"; do
            echo "NodeName=$n NodeAddr=$(node_ip "$n") CPUs=$cpus State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
    } >"$conf"
}

show_logs() {
    local f
    for f in "$dir"/log/*.log "$dir"/munge/*.log; do
        [ -s "$f" ] || continue
        echo "--- $f (last lines)" >&2
        tail -n 15 "$f" >&2
    done
}

wait_pidfile() { # FILE SECONDS: the pid in FILE once it is alive
    local i p
    for ((i = 0; i < $2 * 10; i++)); do
        p=$(pid_of "$1")
        alive "$p" && { echo "$p"; return 0; }
        sleep 0.1
    done
    return 1
}

do_stop() {
    local f p i ns pids quiet=${1:-}
    # jobs first, while the controller can still end them cleanly
    p=$(pid_of "$dir/run/slurmctld.pid")
    if alive "$p" && [ -f "$conf" ] && ns_exists "$ns_ctl"; then
        local jobs
        jobs=$(in_ns "$ns_ctl" timeout 5 squeue -h -o %A 2>/dev/null)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086
            in_ns "$ns_ctl" timeout 5 scancel $jobs 2>/dev/null
            for ((i = 0; i < 30; i++)); do
                [ -z "$(in_ns "$ns_ctl" timeout 5 squeue -h -o %A 2>/dev/null)" ] && break
                sleep 0.2
            done
        fi
    fi
    # the daemons by their pid files: TERM, then KILL after 5 s
    for f in $(pidfiles); do
        p=$(pid_of "$f")
        alive "$p" && kill -TERM "$p" 2>/dev/null
    done
    for f in $(pidfiles); do
        p=$(pid_of "$f")
        for ((i = 0; i < 50; i++)); do alive "$p" || break; sleep 0.1; done
        alive "$p" && { echo "cluster.sh: $(basename "$f" .pid) (pid $p) ignored TERM: KILL" >&2; kill -KILL "$p"; }
    done
    # whatever is left in this instance's namespaces (slurmstepd, job tasks, clients of
    # `exec`): by the PIDs `ip netns pids` lists
    for ns in "${all_ns[@]}"; do
        ns_exists "$ns" || continue
        pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
        [ -n "${pids// /}" ] || continue
        # shellcheck disable=SC2086
        kill -TERM $pids 2>/dev/null
    done
    for ns in "${all_ns[@]}"; do
        ns_exists "$ns" || continue
        for ((i = 0; i < 30; i++)); do
            pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
            [ -n "${pids// /}" ] || break
            sleep 0.1
        done
        # shellcheck disable=SC2086
        [ -n "${pids// /}" ] && kill -KILL $pids 2>/dev/null
        for ((i = 0; i < 30; i++)); do
            [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
            sleep 0.1
        done
        ip netns del "$ns" 2>/dev/null || echo "cluster.sh: could not delete namespace $ns" >&2
    done
    # only what start put there, then the directory when that leaves it empty
    rm -rf "$dir"/{slurm.conf,hosts,nodes,munge,run,log,spool,tmp,state} 2>/dev/null
    rmdir "$dir" 2>/dev/null
    local left
    left=$(running_pieces)
    if [ -n "$left" ]; then
        echo "cluster.sh: still there after stop:" >&2
        echo "$left" >&2
        return 1
    fi
    [ -n "$quiet" ] || echo "cluster.sh: instance $inst stopped"
    return 0
}

start_slurmd() { # NODE: in its namespace, its own UTS namespace: the host name is its Slurm name
    rm -f "$dir/run/slurmd-$1.pid"
    in_ns "$(ns_node "$1")" unshare --uts sh -c "hostname $1 && exec slurmd" &&
        wait_pidfile "$dir/run/slurmd-$1.pid" 10 >/dev/null
}

wait_idle() { # NODE SECONDS: until sinfo shows NODE idle
    local i
    for ((i = 0; i < $2 * 5; i++)); do
        [ "$(in_ns "$ns_ctl" timeout 5 sinfo -h -n "$1" -o %t 2>/dev/null)" = idle ] && return 0
        sleep 0.2
    done
    return 1
}

fail_start() {
    trap - ERR
    set +E
    echo "cluster.sh: start failed: $1; stopping what was started" >&2
    show_logs
    do_stop quiet
    exit 1
}

do_start() {
    local why left n ns p
    why=$(why_not)
    [ -z "$why" ] || die "cannot start a cluster here: $why"
    left=$(running_pieces)
    if [ -n "$left" ]; then
        echo "cluster.sh: instance $inst is already (partly) up:" >&2
        echo "$left" >&2
        die "run 'GT_SLURM_INSTANCE=$inst $0 stop' first, or use another GT_SLURM_INSTANCE"
    fi
    # from here on a failure stops what was started
    trap 'fail_start "a command failed (line $LINENO)"' ERR
    set -E
    rm -rf "$dir"/{slurm.conf,hosts,munge,run,log,spool,tmp,state}
    mkdir -p "$dir"/{run,log,state,munge}
    chmod 755 "$dir"
    echo "${#nodes[@]}" >"$dir/nodes"
    for n in "${nodes[@]}"; do
        mkdir -p "$dir/spool/$n" "$dir/tmp/$n"
        chmod 1777 "$dir/tmp/$n"
    done
    write_conf
    {
        printf '127.0.0.1 localhost\n%s %s\n' "$ctl_ip" "$(hostname)"
        for n in "${nodes[@]}"; do printf '%s %s\n' "$(node_ip "$n")" "$n"; done
    } >"$dir/hosts"

    # munge: an instance's own key, socket and daemon (no system daemon is touched)
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    chown -R munge:munge "$dir/munge"
    chmod 711 "$dir/munge" # munged: the socket's directory must be searchable by all
    chmod 400 "$dir/munge/munge.key"

    # the network: a bridge in the controller's namespace, a veth to each node's
    ip netns add "$ns_ctl"
    ip -n "$ns_ctl" link set lo up
    ip -n "$ns_ctl" link add br0 type bridge
    ip -n "$ns_ctl" addr add "$ctl_ip/24" dev br0
    ip -n "$ns_ctl" link set br0 up
    for n in "${nodes[@]}"; do
        ns=$(ns_node "$n")
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip -n "$ns_ctl" link add "v$n" type veth peer name eth0 netns "$ns"
        ip -n "$ns_ctl" link set "v$n" master br0 up
        ip -n "$ns" addr add "$(node_ip "$n")/24" dev eth0
        ip -n "$ns" link set eth0 up
    done

    # munged, as its user; --origin: no look-up of the host name
    in_ns "$ns_ctl" runuser -u munge -- munged --socket="$dir/munge/munge.socket" \
        --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
        --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" \
        --origin="$ctl_ip" --num-threads=2
    p=$(wait_pidfile "$dir/munge/munged.pid" 10) || fail_start "munged did not start"

    # -i: ignore a lost state (the state directory is new)
    in_ns "$ns_ctl" slurmctld -i
    p=$(wait_pidfile "$dir/run/slurmctld.pid" 10) || fail_start "slurmctld did not start"
    for n in "${nodes[@]}"; do
        start_slurmd "$n" || fail_start "slurmd on $n did not start"
    done

    # every node idle
    local i idle=0 want=${#nodes[@]}
    for ((i = 0; i < wait_s * 5; i++)); do
        idle=$(in_ns "$ns_ctl" timeout 5 sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
        [ "$idle" -eq "$want" ] && break
        sleep 0.2
    done
    if [ "$idle" -ne "$want" ]; then
        in_ns "$ns_ctl" timeout 5 sinfo -N >&2
        fail_start "after ${wait_s} s, $idle of $want nodes are idle"
    fi
    trap - ERR
    set +E
    echo "cluster.sh: instance $inst up: ${#nodes[@]} nodes (node1 $(node_ip node1) .. ${nodes[-1]} $(node_ip "${nodes[-1]}")), controller $ctl_ip:$port"
    echo "cluster.sh: state in $dir; run commands with: GT_SLURM_INSTANCE=$inst $0 exec CMD..."
}

do_status() {
    local left rc=0
    left=$(running_pieces)
    if [ -z "$left" ]; then
        echo "cluster.sh: instance $inst: nothing runs"
        return 3
    fi
    echo "cluster.sh: instance $inst ($dir, subnet $subnet.0/24):"
    echo "$left" | sed 's/^/  /'
    # the controller, munged, a slurmd per node; a namespace per node and the controller's
    [ "$(echo "$left" | wc -l)" -eq $((2 * ${#nodes[@]} + 3)) ] || rc=1
    if ns_exists "$ns_ctl" && [ -f "$conf" ]; then
        in_ns "$ns_ctl" timeout 5 sinfo -N || rc=1
        in_ns "$ns_ctl" timeout 5 squeue
    fi
    return $rc
}

case "$cmd" in
    start) do_start ;;
    stop)
        [ "$(id -u)" -eq 0 ] || die "stop needs root"
        do_stop
        ;;
    status) do_status ;;
    check)
        why=$(why_not)
        if [ -n "$why" ]; then echo "cluster.sh: no two-node cluster here: $why"; exit 77; fi
        echo "cluster.sh: a two-node cluster can run here (instance $inst)"
        ;;
    exec)
        [ $# -gt 0 ] || rc_die=2 die "exec needs a command"
        [ "$(id -u)" -eq 0 ] || die "exec needs root (it enters the cluster's network namespace)"
        { ns_exists "$ns_ctl" && [ -f "$conf" ] && [ -f "$dir/hosts" ]; } ||
            die "instance $inst is not up (GT_SLURM_INSTANCE=$inst $0 start)"
        # exec: a signal to this script (timeout, ^C) reaches the command itself
        in_ns() { exec nsenter --net="/run/netns/$1" -- unshare --mount --propagation private -- \
            sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$dir/hosts" "${@:2}"; }
        in_ns "$ns_ctl" env SLURM_CONF="$conf" "${mpi_env[@]}" "$@"
        ;;
    node-kill | node-start)
        [ "$(id -u)" -eq 0 ] || die "$cmd needs root"
        n=${1:-}
        [[ " ${nodes[*]} " == *" $n "* ]] || rc_die=2 die "$cmd needs a node: node1 .. ${nodes[-1]}"
        ns_exists "$(ns_node "$n")" && [ -f "$conf" ] ||
            die "instance $inst is not up (GT_SLURM_INSTANCE=$inst $0 start)"
        p=$(pid_of "$dir/run/slurmd-$n.pid")
        if [ "$cmd" = node-kill ]; then
            alive "$p" || die "slurmd on $n is not running"
            kill -KILL "$p"
            for ((i = 0; i < 50; i++)); do alive "$p" || break; sleep 0.1; done
            echo "cluster.sh: slurmd on $n (pid $p) killed"
        else
            alive "$p" && die "slurmd on $n already runs (pid $p)"
            start_slurmd "$n" || { show_logs; die "slurmd on $n did not start"; }
            wait_idle "$n" "$wait_s" || die "slurmd on $n runs, but the node is not idle after ${wait_s} s: $(in_ns "$ns_ctl" sinfo -h -n "$n" -o '%t %E')"
            echo "cluster.sh: slurmd on $n started, node idle"
        fi
        ;;
    link-rate | link-clear)
        [ "$(id -u)" -eq 0 ] || die "$cmd needs root"
        n=${1:-}
        [[ " ${nodes[*]} " == *" $n "* ]] || rc_die=2 die "$cmd needs a node: node1 .. ${nodes[-1]}"
        ns_exists "$(ns_node "$n")" || die "instance $inst is not up (GT_SLURM_INSTANCE=$inst $0 start)"
        if [ "$cmd" = link-rate ]; then
            rate=${2:-}
            [[ "$rate" =~ ^[0-9]+(kbit|mbit|gbit)$ ]] ||
                rc_die=2 die "link-rate $n needs a rate such as 100mbit (kbit, mbit or gbit)"
            # both directions: the node's eth0 (what it sends) and the bridge's port to it
            # (what it receives); a token bucket whose burst holds a 64 KiB GSO packet (a smaller one drops
            # every segment veth hands it and the ranks lose their TCP connections)
            ip netns exec "$(ns_node "$n")" tc qdisc replace dev eth0 root tbf rate "$rate" \
                burst 256kb latency 200ms || die "tc on $n's eth0 failed (does the kernel have sch_tbf?)"
            ip netns exec "$ns_ctl" tc qdisc replace dev "v$n" root tbf rate "$rate" \
                burst 256kb latency 200ms || die "tc on the bridge's port to $n failed"
            echo "cluster.sh: $n's link limited to $rate each way"
        else
            ip netns exec "$(ns_node "$n")" tc qdisc del dev eth0 root 2>/dev/null
            ip netns exec "$ns_ctl" tc qdisc del dev "v$n" root 2>/dev/null
            echo "cluster.sh: $n's link unlimited"
        fi
        ;;
    -h | --help | help) usage ;;
    "") echo "cluster.sh: say start, stop, status, exec CMD..., or check" >&2; exit 2 ;;
    *) echo "cluster.sh: unknown command '$cmd' (start, stop, status, exec, check, node-kill, node-start, link-rate, link-clear)" >&2; exit 2 ;;
esac
