#!/usr/bin/env bash
# test_chaos.sh — the kill campaign. `make test` runs a short one (CHAOS_KILLS, default 24);
# `make chaos` the long one (CHAOS_KILLS=1000). Two parts, SIGKILL at pseudo-random moments
# (bash's $RANDOM from CHAOS_SEED, so a campaign repeats):
#   A. `baton train` streaming its data from nginx, then from the RADOS Gateway (S3; pipe mode),
#      and watching `baton imds` for notices. Each event is one of: the trainer killed during a
#      step, the trainer killed while a checkpoint is being written (a .ckpt-*.tmp.* folder
#      exists), the server (nginx's master and workers, or radosgw) killed mid-stream and started
#      again on its port (the trainer retries; AWS_MAX_ATTEMPTS=10 against the gateway, which
#      takes a few seconds), `baton imds` killed and started again,
#      or an interruption notice (imds restarted with one: the trainer must exit 75 after a
#      checkpoint). After every trainer kill: `ckpt ls` lists nothing damaged, the newest ok
#      checkpoint verifies, and the next run resumes from exactly that step. Servers killed under
#      a running trainer must not end it. Every finished run's model and optimizer state are
#      byte-identical to an uninterrupted run's; a new cycle starts.
#   B. a local spot fleet training for real (interruptions with notice, zones alternating, so the
#      volume moves): its supervisor SIGKILLed (every third time while a volume move is under way)
#      and started again, until the job completes. Then: the volume exists exactly once, no
#      trainer is left running, every checkpoint verifies, and the final weights are the
#      uninterrupted run's.
# Kills: CHAOS_KILLS in all, a sixth (at least 3) of the supervisor, a tenth (at least 2) of the
# gateway, the rest under nginx (CHAOS_SUPERVISOR_KILLS, CHAOS_RGW_KILLS, CHAOS_A_KILLS override).
# Prints the figures (kills by kind, resumes, notices, fleet jobs) as the last lines.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
. tests/servers/lib.sh
srv_init
KILLS=${CHAOS_KILLS:-24}
SUP_KILLS=${CHAOS_SUPERVISOR_KILLS:-$((KILLS / 6 > 3 ? KILLS / 6 : 3))}
RGW_KILLS=${CHAOS_RGW_KILLS:-$((KILLS / 10 > 2 ? KILLS / 10 : 2))}
A_KILLS=${CHAOS_A_KILLS:-$((KILLS - SUP_KILLS - RGW_KILLS))}
RANDOM=${CHAOS_SEED:-7}
export OMP_NUM_THREADS=1 BATON_NOTICE_POLL_S=0.2   # notices seen within 0.2 s (AWS suggests 5)
TPID= IMDS_PID= SUP=
cleanup() {
    for p in $TPID $IMDS_PID $SUP; do kill -9 "$p" 2>/dev/null; done
    pkill -9 -f "logs/chaos-$$.csv" 2>/dev/null   # the fleet's trainers (FLOG below)
    srv_cleanup
    [ "${BATON_KEEP_TMP:-0}" = 1 ] || rm -rf "$T"
}
trap cleanup EXIT
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
msleep() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
newest_ok() { "$BATON" ckpt ls "$1" 2>/dev/null | awk '$NF == "ok" { print $1 + 0; exit }'; }
now_us() { echo "${EPOCHREALTIME/./}"; }

check '"$BATON" pack --from fashion-mnist --split test --out "$T/ds" --shard-mb 1 --quiet >/dev/null' "pack"
srv_nginx "$T"
H="http://127.0.0.1:$NGINX_PORT/ds/"
srv_port IMDS_PORT
export AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$IMDS_PORT"
start_imds() {   # start_imds [ARGS]: baton imds on its port, answering
    "$BATON" imds --listen "127.0.0.1:$IMDS_PORT" "$@" >"$T/imds.url" 2>>"$T/imds.err" &
    IMDS_PID=$!
    for _ in $(seq 200); do
        curl -s -o /dev/null -m 1 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' \
            "http://127.0.0.1:$IMDS_PORT/latest/api/token" && return 0
        sleep 0.01
    done
    bad "imds did not start on $IMDS_PORT: $(tail -3 "$T/imds.err")"
}
kill_nginx() {   # the master and its workers, all at once
    local mp
    mp=$(cat "$SRV/nginx/nginx.pid" 2>/dev/null) || return
    kill -9 "$mp" $(pgrep -P "$mp") 2>/dev/null
    for _ in $(seq 200); do ss -Hltn "sport = :$NGINX_PORT" | grep -q . || break; sleep 0.01; done
    rm -f "$SRV/nginx/nginx.pid"
}
kill_rgw() {
    local p
    p=$(cat "$SRV/rgw/run/client.rgw.test.pid" 2>/dev/null) && kill -9 "$p" 2>/dev/null
    for _ in $(seq 300); do ss -Hltn "sport = :$RGW_PORT" | grep -q . || break; sleep 0.01; done
}
start_rgw() {   # the gateway alone (the monitor and the OSD keep running)
    radosgw -c "$SRV/rgw/ceph.conf" -n client.rgw.test </dev/null >>"$T/rgw.err" 2>&1 || { bad "radosgw did not start again"; return; }
    for _ in $(seq 300); do curl -s -o /dev/null -m 1 "http://127.0.0.1:$RGW_PORT/" && return; sleep 0.05; done
    bad "radosgw did not answer again within 15 s"
}
start_nginx() { tests/servers/nginx.sh start "$SRV/nginx" "$NGINX_PORT" "$T" >/dev/null 2>>"$T/nginx.err" || bad "nginx did not start again"; }
start_imds

# ---------------------------------------------------------------- A: trainer, a server, imds
N=240   # 157 steps per epoch at --batch 64: every run crosses an epoch boundary
TRO="--mode pipe --model lenet --batch 64 --epochs 2 --max-steps $N --ckpt-every-steps 3 --seed 7 --threads 1 --quiet"
FIN=$(printf 'ckpt-%09d' "$N")
check '"$BATON" train --data "$H" $TRO --ckpt-dir "$T/ref" >/dev/null' "uninterrupted reference run"
declare -A killed=([step]=0 [persist]=0 [nginx]=0 [rgw]=0 [imds]=0)
cycles=0 finished=0 notices=0 resumes=0 during_write=0 corrupt=0 early=0 a_kills=0
C= expect= started=0 TR=
new_cycle() { cycles=$((cycles + 1)); C=$T/c$cycles; expect=; }
start_trainer() {
    $TR --ckpt-dir "$C" >"$T/run.out" 2>"$T/run.err" &
    TPID=$! started=1
}
ended() {   # ended RC: the trainer that just ended resumed from the step expected; finished runs compared
    local rc=$1 line
    started=0 TPID=
    line=$(grep -m1 'resuming from' "$T/run.err")
    if [ "$rc" -eq 137 ] && [ -z "$line" ] && [ -n "$expect" ] && [ "$(newest_ok "$C")" = "$expect" ]; then
        early=$((early + 1))   # killed before it said where it starts, and it wrote nothing
    elif [ -z "$expect" ]; then check '[ -z "$line" ]' "cycle $cycles: resumed although no checkpoint was ok: $line"
    else check '[[ "$line" == *"(step $expect, "* ]]' "cycle $cycles: expected a resume from step $expect: $(head -c 400 "$T/run.err")"
        resumes=$((resumes + 1)); fi
    case $rc in
        137) ;;
        75) ;;
        0)  finished=$((finished + 1))
            check 'cmp -s "$T/ref/$FIN/model.safetensors" "$C/$FIN/model.safetensors" &&
                   cmp -s "$T/ref/$FIN/optim.safetensors" "$C/$FIN/optim.safetensors"' \
                "cycle $cycles: the final weights differ from the uninterrupted run's"
            check '"$BATON" ckpt verify "$C" >/dev/null 2>&1' "cycle $cycles: every checkpoint verifies"
            new_cycle ;;
        *)  bad "cycle $cycles: train exited $rc: $(head -c 600 "$T/run.err")"; new_cycle ;;
    esac
}
after_kill() {   # nothing damaged is listed; the newest ok checkpoint verifies and is what comes next
    compgen -G "$C/.ckpt-*.tmp.*" >/dev/null && during_write=$((during_write + 1))
    if "$BATON" ckpt ls "$C" 2>/dev/null | grep -q CORRUPT; then corrupt=$((corrupt + 1)); bad "cycle $cycles: ckpt ls lists a damaged checkpoint: $("$BATON" ckpt ls "$C" 2>&1 | head -5)"; fi
    expect=$(newest_ok "$C")
    [ -z "$expect" ] || check '"$BATON" ckpt verify "$C/$(printf "ckpt-%09d" "$expect")" >/dev/null 2>&1' \
        "cycle $cycles: the newest ok checkpoint ($expect) does not verify"
}
part_a() {   # part_a DATA_URI SERVER KILLS: trainers streaming from SERVER (nginx | rgw), KILLS events that kill
    local server=$2 want=$3 done=0 r ev rc until
    TR="$BATON train --data $1 $TRO"
    new_cycle
    while [ "$done" -lt "$want" ]; do
        [ "$started" = 1 ] || start_trainer
        r=$((RANDOM % 10))
        case $r in 0 | 1 | 2 | 3) ev=step ;; 4 | 5 | 6) ev=persist ;; 7) ev=server ;; 8) ev=imds ;; *) ev=notice ;; esac
        msleep $((50 + RANDOM % 1150))
        if [ "$ev" = persist ]; then   # aim at a checkpoint write: at most 0.5 s for a temporary folder
            until=$(($(now_us) + 500000))
            while [ "$(now_us)" -lt "$until" ] && ! compgen -G "$C/.ckpt-*.tmp.*" >/dev/null; do :; done
        fi
        if ! kill -0 "$TPID" 2>/dev/null; then   # it ended before the event: a finished run
            wait "$TPID"; ended $?; continue
        fi
        case $ev in
            step | persist)
                kill -9 "$TPID" 2>/dev/null; wait "$TPID"; rc=$?
                if [ "$rc" -eq 137 ]; then killed[$ev]=$((killed[$ev] + 1)); done=$((done + 1)); fi
                ended "$rc"
                [ "$rc" -eq 137 ] && after_kill ;;
            server)
                "kill_$server"; killed[$server]=$((killed[$server] + 1)); done=$((done + 1))
                msleep $((RANDOM % 400)); "start_$server" ;;
            imds)
                kill -9 "$IMDS_PID" 2>/dev/null; wait "$IMDS_PID" 2>/dev/null
                killed[imds]=$((killed[imds] + 1)); done=$((done + 1))
                msleep $((RANDOM % 400)); start_imds ;;
            notice)
                kill "$IMDS_PID" 2>/dev/null; wait "$IMDS_PID" 2>/dev/null
                start_imds --interrupt-after 0.1 --notice 60
                for _ in $(seq 300); do kill -0 "$TPID" 2>/dev/null || break; sleep 0.05; done
                kill -9 "$TPID" 2>/dev/null; wait "$TPID"; rc=$?
                kill "$IMDS_PID" 2>/dev/null; wait "$IMDS_PID" 2>/dev/null; start_imds
                if [ "$rc" -eq 0 ]; then ended 0; continue; fi   # it finished first
                notices=$((notices + 1))
                check '[ "$rc" -eq 75 ] && grep -q "committed, stopping" "$T/run.err"' \
                    "cycle $cycles: a notice: exit $rc, want 75 after a checkpoint: $(tail -c 400 "$T/run.err")"
                ended "$rc"; expect=$(newest_ok "$C") ;;
        esac
    done
    if [ "$started" = 1 ]; then wait "$TPID"; ended $?; fi
    if [ -d "$C" ]; then start_trainer; wait "$TPID"; ended $?; fi   # the cycle left unfinished: to its end
    a_kills=$((a_kills + done))
}
part_a "$H" nginx "$A_KILLS"
# the RADOS Gateway (S3): radosgw SIGKILLed under a streaming trainer and started
# again (a few seconds: the trainer rides it out with AWS_MAX_ATTEMPTS=10)
if [ "$RGW_KILLS" -gt 0 ] && srv_have_rgw; then
    srv_rgw
    check '"$BATON" push "$T/ds" s3://baton-test/ds --create-bucket --quiet >/dev/null 2>"$T/push.err"' \
        "the dataset pushed to the RADOS Gateway: $(cat "$T/push.err" 2>/dev/null)"
    AWS_MAX_ATTEMPTS=10 part_a "s3://baton-test/ds/" rgw "$RGW_KILLS"
elif [ "$RGW_KILLS" -gt 0 ]; then
    skip "RADOS Gateway not installed (scripts/deps.sh installs it): its kills not run"
fi
[ "$A_KILLS" -eq 0 ] || check '[ "$finished" -ge 1 ] && [ "$corrupt" -eq 0 ]' "runs finished: $finished, damaged listings: $corrupt"
echo "A: $a_kills kills (trainer during a step ${killed[step]}, during a checkpoint write ${killed[persist]} ($during_write with its temporary folder present), nginx mid-stream ${killed[nginx]}, RADOS Gateway mid-stream ${killed[rgw]}, imds ${killed[imds]}), $notices notices, $resumes resumes ($early runs killed before they began), $finished runs finished byte-identical, $cycles cycles"

# ---------------------------------------------------------------- B: the fleet supervisor
S=$T/state
mkdir -p "$T/seed"
cp -r "$T/ds" "$T/seed/data"
FE=${CHAOS_FLEET_EPOCHS:-6}   # 79 steps an epoch
# the log's name is this run's own: the orphan check below looks for it (sh may exec baton, so a
# comment in the command is not on the trainer's command line), and never sees another test's trainers
FLOG=logs/chaos-$$.csv
FTRAIN="baton train --data data --model mlp --epochs $FE --batch 128 --seed 7 --threads 1 --quiet --ckpt-dir ckpt --ckpt-every-steps 10 --log $FLOG"
FSTEPS=$((79 * FE))
FFIN=$(printf 'ckpt-%09d' "$FSTEPS")
check '"$BATON" train --data "$T/ds" --model mlp --epochs $FE --batch 128 --seed 7 --threads 1 --quiet --no-notice --ckpt-dir "$T/fref" --ckpt-every-steps 10 >/dev/null' \
    "the fleet's uninterrupted reference"
fleet_job() {   # fleet_job NAME: interruptions with notice every 40 steps, zones alternating
    {
        echo "name: $1"
        echo "command: $FTRAIN"
        echo "instance_types: [c5.xlarge]"
        echo "zones: [us-east-1a, us-east-1b]"
        echo "volume: {seed: $T/seed}"
        echo "market:"
        echo "  time_scale: 60"
        echo "  launch_delay: 10s"
        echo "  notice: 2m"
        echo "  capacity_cooldown: 2m"
        echo "  interruptions:"
        for _ in 1 2 3 4; do echo "    - {after_steps: 40}"; done
    } >"$T/$1.yaml"
}
sup_kills=0 jobs=0 moves_hit=0
while [ "$sup_kills" -lt "$SUP_KILLS" ]; do
    jobs=$((jobs + 1)); J=f$jobs
    fleet_job "$J"
    while :; do
        BATON_LOG=warn "$BATON" fleet run "$T/$J.yaml" --state "$S" --quiet >"$T/$J.out" 2>>"$T/$J.err" &
        SUP=$!
        if [ "$sup_kills" -ge "$SUP_KILLS" ]; then wait "$SUP"; rc=$?; SUP=; break; fi
        if [ $((sup_kills % 3)) -eq 2 ]; then   # aim at a volume move: its first event, then a random moment
            for _ in $(seq 400); do grep -q 'snapshot-created' "$S/$J/events.jsonl" 2>/dev/null && break; kill -0 "$SUP" 2>/dev/null || break; sleep 0.02; done
            msleep $((RANDOM % 200))
        else
            msleep $((300 + RANDOM % 2500))
        fi
        if ! kill -0 "$SUP" 2>/dev/null; then wait "$SUP"; rc=$?; SUP=; break; fi
        if grep -q 'snapshot-created' "$S/$J/events.jsonl" 2>/dev/null && ! grep -q 'old-volume-deleted' <(tail -n 3 "$S/$J/events.jsonl"); then
            moves_hit=$((moves_hit + 1)); fi
        kill -9 "$SUP" 2>/dev/null; wait "$SUP" 2>/dev/null; SUP=
        sup_kills=$((sup_kills + 1))
    done
    check '[ "$rc" -eq 0 ]' "fleet $J: the last supervisor exited $rc: $(tail -3 "$T/$J.err")"
    "$BATON" fleet status "$J" --state "$S" --json >"$T/$J.json" 2>/dev/null
    V=$(json "$T/$J.json" 'd["tasks"][0]["volume"]')
    check '[ "$(find "$S/$J/volumes" -mindepth 2 -maxdepth 2 -name "vol-0-*" | wc -l)" = 1 ]' \
        "fleet $J: the volume exists exactly once: $(find "$S/$J/volumes" -mindepth 2 -maxdepth 2 | tr '\n' ' ')"
    check '! pgrep -f "$FLOG" >/dev/null' \
        "fleet $J: no trainer left running: $(pgrep -af "$FLOG" | head -c 600)"
    check 'cmp -s "$T/fref/$FFIN/model.safetensors" "$V/ckpt/$FFIN/model.safetensors" &&
           cmp -s "$T/fref/$FFIN/optim.safetensors" "$V/ckpt/$FFIN/optim.safetensors"' \
        "fleet $J: the final weights differ from the uninterrupted run's"
    check '"$BATON" ckpt verify "$V/ckpt" >/dev/null 2>&1' "fleet $J: every checkpoint verifies"
done
echo "B: $sup_kills supervisor kills ($moves_hit during a volume move) over $jobs fleet jobs, each ending byte-identical with one volume and no orphan"
echo "chaos: $((a_kills + sup_kills)) kills in all"
finish
