/* test_fleet_db.c — the fleet's records and worker processes: every field of the job, task,
 * instance and event rows survives a save and a load (and the events also land in events.jsonl),
 * and values out of range (steps beyond 2^53 or below -1, infinite times, negative prices) are
 * refused naming the row;
 * a worker's exit status reaches both waitpid and the shim's status file, a killed worker leaves
 * none, its environment and folder are the ones asked for, a reused pid is not mistaken for it;
 * progress files and checkpoint folder names are read as the supervisor expects. */
#include "../../src/fleet/fleet_parts.h"
#include "baton/fleet.h"
#include "check.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void records(void)
{
    baton_err e = {0};
    baton_fleet_db *db;
    CHECK_MSG(fleet_db_open(dir, &db, &e) == 0, "%s", e.msg);
    baton_fleet_job j = {.origin = 1700000000.25, .time_scale = 60, .t_end = -1, .supervisor_pid = 42,
                         .supervisor_start = 123456789012ULL, .next_volume = 3, .next_snapshot = 2};
    strcpy(j.name, "job-1");
    strcpy(j.state, "running");
    strcpy(j.jobfile, "/x/job.yaml");
    j.jobfile_text = "name: job-1\n";
    baton_fleet_task t = {.idx = 1, .command = "sh -c 'echo \"hi\"'", .state = BATON_TASK_FAILED, .crashes = 3,
                          .launches = 4, .interruptions = 5, .final_step = 1234567890123LL};
    strcpy(t.volume, "/v/vol-1-2");
    strcpy(t.zone, "us-east-1b");
    baton_fleet_inst in = {.id = 7, .task = 1, .launch = 2, .pool = 3, .spot_price = 0.0561, .on_demand_price = 0.17,
                           .state = BATON_W_NOTICED, .pid = 999, .pid_start = 55555, .port = 40001, .t_request = 1.5,
                           .t_running = 91.5, .t_first_step = 100, .t_notice = 200, .t_deadline = 320, .t_end = -1,
                           .plan_after = 108.5, .plan_notice = 120, .exit_code = -1,
                           .interrupted = BATON_INT_NOTICE, .resumed_step = 40, .reached_step = 77, .ckpt_step = 60};
    strcpy(in.name, "i-0123456789abcdef0");
    strcpy(in.type, "c5.xlarge");
    strcpy(in.zone, "us-east-1a");
    strcpy(in.reason, "it's \"quoted\"");
    strcpy(in.volume, "/v/vol-1-2");
    CHECK(fleet_db_begin(db, &e) == 0);
    CHECK(fleet_db_save_job(db, &j, &e) == 0);
    CHECK(fleet_db_save_task(db, &t, &e) == 0);
    CHECK(fleet_db_save_inst(db, &in, &e) == 0);
    CHECK(fleet_db_commit(db, &e) == 0);
    in.state = BATON_W_STOPPED;   /* a second save replaces the row */
    in.exit_code = 75;
    CHECK(fleet_db_save_inst(db, &in, &e) == 0);
    baton_fleet_event ev = {.t_sim = 12.5, .t_wall = 1700000012.5, .inst = 7, .task = 1, .detail = "{\"step\":60}"};
    strcpy(ev.kind, "checkpoint");
    CHECK(fleet_db_event(db, &ev, &e) == 0 && ev.seq == 1);
    baton_fleet_event ev2 = {.t_sim = 13, .inst = 0, .task = -1};
    strcpy(ev2.kind, "job");
    strcpy(ev2.from, "running");
    strcpy(ev2.to, "done");
    CHECK(fleet_db_event(db, &ev2, &e) == 0 && ev2.seq == 2);
    fleet_db_close(db);

    CHECK(fleet_db_open(dir, &db, &e) == 0);
    baton_fleet_records r;
    int found = 0;
    CHECK(fleet_db_load(db, 1, &r, &found, &e) == 0 && found);
    CHECK(!strcmp(r.job.name, "job-1") && !strcmp(r.job.state, "running") && r.job.origin == 1700000000.25);
    CHECK(r.job.time_scale == 60 && r.job.t_end == -1 && r.job.supervisor_pid == 42);
    CHECK(r.job.supervisor_start == 123456789012ULL && r.job.next_volume == 3 && r.job.next_snapshot == 2);
    CHECK(!strcmp(r.job.jobfile, "/x/job.yaml") && !strcmp(r.job.jobfile_text, "name: job-1\n"));
    CHECK_EQ_U(r.ntasks, 1);
    CHECK(r.tasks[0].idx == 1 && !strcmp(r.tasks[0].command, t.command) && r.tasks[0].state == BATON_TASK_FAILED);
    CHECK(r.tasks[0].crashes == 3 && r.tasks[0].launches == 4 && r.tasks[0].interruptions == 5);
    CHECK(r.tasks[0].final_step == 1234567890123LL && !strcmp(r.tasks[0].volume, t.volume) && !strcmp(r.tasks[0].zone, t.zone));
    CHECK_EQ_U(r.ninsts, 1);
    baton_fleet_inst *x = &r.insts[0];
    CHECK(x->id == 7 && !strcmp(x->name, in.name) && x->task == 1 && x->launch == 2 && x->pool == 3);
    CHECK(!strcmp(x->type, "c5.xlarge") && !strcmp(x->zone, "us-east-1a") && x->spot_price == 0.0561 && x->on_demand_price == 0.17);
    CHECK(x->state == BATON_W_STOPPED && !strcmp(x->reason, in.reason) && x->pid == 999 && x->pid_start == 55555 && x->port == 40001);
    CHECK(x->t_request == 1.5 && x->t_running == 91.5 && x->t_first_step == 100 && x->t_notice == 200);
    CHECK(x->t_deadline == 320 && x->t_end == -1 && x->plan_after == 108.5 && x->plan_notice == 120);
    CHECK(x->exit_code == 75 && x->interrupted == BATON_INT_NOTICE && x->resumed_step == 40 && x->reached_step == 77);
    CHECK(x->ckpt_step == 60 && !strcmp(x->volume, in.volume));
    CHECK_EQ_U(r.nevents, 2);
    CHECK(!strcmp(r.events[0].kind, "checkpoint") && r.events[0].inst == 7 && !strcmp(r.events[0].detail, "{\"step\":60}"));
    CHECK(r.events[1].task == -1 && !strcmp(r.events[1].to, "done"));
    fleet_records_free(&r);
    fleet_db_close(db);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; "
             "sys.exit(0 if len(l)==2 and l[0]['detail']['step']==60 and l[1]['to']=='done' else 1)\" %s/events.jsonl", dir);
    CHECK(system(cmd) == 0);
    /* values a damaged database may hold are refused, naming the row (the report's sums overflowed) */
    const struct { int64_t reached; double t_end, price; } bad[] = {
        {4876353077643808079LL, -1, 0.1}, {-7, -1, 0.1}, {77, INFINITY, 0.1}, {77, 1e300, 0.1}, {77, -1, -0.5}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        baton_fleet_inst b = in;
        b.reached_step = bad[k].reached;
        b.t_end = bad[k].t_end;
        b.spot_price = bad[k].price;
        CHECK(fleet_db_open(dir, &db, &e) == 0 && fleet_db_save_inst(db, &b, &e) == 0);
        int rc = fleet_db_load(db, 1, &r, &found, &e);
        CHECK_MSG(rc == BATON_ERR_CORRUPT && strstr(e.msg, "instance 7") && strstr(e.msg, "fleet.db"), "case %zu: %d %s", k,
                  rc, e.msg);
        fleet_records_free(&r);
        CHECK(fleet_db_save_inst(db, &in, &e) == 0 && fleet_db_load(db, 1, &r, &found, &e) == 0);
        fleet_records_free(&r);
        fleet_db_close(db);
    }
    /* an empty database has no job */
    char d2[300];
    snprintf(d2, sizeof d2, "%s/empty", dir);
    mkdir(d2, 0755);
    CHECK(fleet_db_open(d2, &db, &e) == 0);
    CHECK(fleet_db_load(db, 1, &r, &found, &e) == 0 && !found);
    fleet_db_close(db);
    /* a database that cannot be created */
    snprintf(d2, sizeof d2, "%s/no/such/dir", dir);
    CHECK(fleet_db_open(d2, &db, &e) != 0 && strstr(e.msg, "fleet.db"));
}

static int run_worker(const char *cmd, int *pid, uint64_t *start, const char *const *env, size_t nenv)
{
    char log[300], status[300];
    snprintf(log, sizeof log, "%s/w.log", dir);
    snprintf(status, sizeof status, "%s/w.status", dir);
    baton_worker_spec w = {cmd, dir, log, status, env, nenv};
    baton_err e = {0};
    return fleet_worker_spawn(&w, pid, start, &e);
}

static int wait_code(int pid)
{
    int code = -1;
    for (int k = 0; k < 5000 && !fleet_worker_reap(pid, &code); k++) usleep(1000);
    return code;
}

static void workers(void)
{
    int pid, code;
    uint64_t start;
    char status[300], path[300];
    snprintf(status, sizeof status, "%s/w.status", dir);
    const char *env[] = {"BATON_TEST_VAR=forty two"};
    CHECK(run_worker("echo \"$BATON_TEST_VAR in $(pwd)\"; exit 7", &pid, &start, env, 1) == 0);
    CHECK(pid > 0 && start > 0 && fleet_proc_start_time(pid) == start);
    CHECK(getpgid(pid) == pid);   /* its own process group */
    CHECK(wait_code(pid) == 7);
    CHECK(fleet_worker_read_status(status, &code, NULL) == 1 && code == 7);
    CHECK(!fleet_proc_same(pid, start));
    char want[400], cmd[800];
    snprintf(want, sizeof want, "forty two in %s", dir);
    snprintf(cmd, sizeof cmd, "grep -qx '%s' %s/w.log", want, dir);
    CHECK(system(cmd) == 0);
    /* a worker that is killed leaves no status; a pid with another start time is not it */
    CHECK(run_worker("sleep 30", &pid, &start, NULL, 0) == 0);
    CHECK(fleet_proc_same(pid, start) && !fleet_proc_same(pid, start + 1));
    fleet_worker_kill(pid);
    CHECK(wait_code(pid) == 128 + SIGKILL);
    CHECK(fleet_worker_read_status(status, &code, NULL) == 0);
    /* the shim outlives a SIGTERM sent to the group and reports how the command ended */
    CHECK(run_worker("trap 'exit 75' TERM; sleep 30 & wait", &pid, &start, NULL, 0) == 0);
    usleep(200000);
    kill(-pid, SIGTERM);
    CHECK(wait_code(pid) == 75);
    CHECK(fleet_worker_read_status(status, &code, NULL) == 1 && code == 75);
    /* progress files and checkpoint names */
    snprintf(path, sizeof path, "%s/p.step", dir);
    CHECK(fleet_progress_file_read(path) == -1);
    FILE *f = fopen(path, "w");
    fputs("00000000000000000123\n", f);
    fclose(f);
    CHECK(fleet_progress_file_read(path) == 123);
    f = fopen(path, "w");
    fputs("junk", f);
    fclose(f);
    CHECK(fleet_progress_file_read(path) == -1);
    snprintf(path, sizeof path, "%s/ck", dir);
    CHECK(fleet_ckpt_newest_name(path) == -1);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/ck/ckpt-000000040", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/ck/ckpt-000000100", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/ck/.ckpt-000000120.tmp.1", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/ck", dir);
    CHECK(fleet_ckpt_newest_name(path) == 100);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/baton-fleetdb-%d", (int)getpid());
    mkdir(dir, 0755);
    records();
    workers();
    baton_remove_tree(dir);
    CHECK_DONE();
}
