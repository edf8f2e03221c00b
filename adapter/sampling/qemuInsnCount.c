/*
 * CycleLens exact sampler: a QEMU TCG plugin that counts how often every guest instruction runs.
 *
 * Debian ships QEMU 7.2 without qemu-plugin.h, so the documented plugin API (version 1, the one
 * QEMU 7.2 implements: QEMU_PLUGIN_VERSION 1) is declared here. Only what this plugin calls is
 * declared; QEMU resolves these symbols in its own executable when it dlopens the plugin.
 *
 * Counting: each instruction gets one 64-bit slot in a fixed open-addressing table at translation
 * time, and an inline add (QEMU_PLUGIN_INLINE_ADD_U64, no helper call) bumps the slot whenever the
 * instruction runs. The table never moves, so a writer thread can read it while the vCPU runs.
 * Under -icount an I/O access rewinds its block (cpu_io_recompile); QEMU re-translates it with
 * CF_MEMI_ONLY, which keeps plugins' exec instrumentation out of the replay, so nothing counts twice.
 *
 * Arguments: out=PATH (required), period_ms=N (snapshot interval, default 200). The snapshot is
 * written to PATH.tmp and renamed over PATH (readers never see half a file), every period and at
 * exit. Format: a header line "cyclelens-insn-counts 1 <translated> <dropped>", then one line per
 * executed instruction: "<hex address> <decimal count>".
 *
 * End stop: stop_at=ADDRESS (hex, 0x optional) and stop_hits=N (default 1). When the instruction at
 * ADDRESS is about to run for the Nth time, the plugin writes the snapshot (that execution not
 * counted, as a debugger's breakpoint there would leave it) and ends QEMU with status 0: a counting
 * run ends where the measured runs end, also for firmware whose exit spins or that never exits.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
extern uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
extern void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn, enum qemu_plugin_op op, void *ptr, uint64_t imm);
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
extern void qemu_plugin_outs(const char *string);
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
extern void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb, enum qemu_plugin_cb_flags flags, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* 2^20 slots: far more distinct instructions than a microcontroller image holds. */
#define TABLE_BITS 20u
#define TABLE_SIZE (1u << TABLE_BITS)

struct slot {
    uint64_t key; /* address + 1; 0 = free */
    uint64_t count;
};

static struct slot *table;
static uint64_t translated;
static uint64_t dropped;
static char *out_path;
static char *tmp_path;
static unsigned period_ms = 200;
static pthread_t writer;
static bool stopping; /* guarded by wake_lock */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;

static struct slot *slot_for(uint64_t vaddr)
{
    uint64_t key = vaddr + 1u;
    /* Fibonacci hashing: instruction addresses are dense, the multiply spreads them. */
    uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64u - TABLE_BITS));
    for (uint32_t probes = 0; probes < TABLE_SIZE; probes++, i = (i + 1u) & (TABLE_SIZE - 1u)) {
        if (table[i].key == key) return &table[i];
        if (table[i].key == 0) {
            table[i].key = key;
            return &table[i];
        }
    }
    return NULL;
}

/* The end stop (stop_at, stop_hits): its own state, its own callback. */
static bool stop_set;
static uint64_t stop_address;
static uint64_t stop_hits = 1;
static uint64_t stop_seen;
static void write_snapshot(void);

/* Runs before the instruction at stop_address executes; counts it itself (no inline add there). */
static void stop_exec(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    struct slot *s = userdata;
    if (++stop_seen >= stop_hits) {
        write_snapshot();
        fflush(NULL);
        _exit(0);
    }
    s->count++;
}

/* True when the instruction is the end stop's: it gets the callback instead of the inline add. */
static bool instrument_stop(struct qemu_plugin_insn *insn, uint64_t vaddr, struct slot *s)
{
    if (!stop_set || vaddr != stop_address) return false;
    qemu_plugin_register_vcpu_insn_exec_cb(insn, stop_exec, QEMU_PLUGIN_CB_NO_REGS, s);
    return true;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        struct slot *s = slot_for(qemu_plugin_insn_vaddr(insn));
        if (s == NULL) {
            dropped++;
            continue;
        }
        translated++;
        if (instrument_stop(insn, qemu_plugin_insn_vaddr(insn), s)) continue;
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &s->count, 1);
    }
}

static void write_snapshot(void)
{
    pthread_mutex_lock(&write_lock);
    FILE *f = fopen(tmp_path, "w");
    if (f != NULL) {
        fprintf(f, "cyclelens-insn-counts 1 %" PRIu64 " %" PRIu64 "\n", translated, dropped);
        for (uint32_t i = 0; i < TABLE_SIZE; i++) {
            uint64_t count = table[i].count;
            if (table[i].key != 0 && count != 0) fprintf(f, "%" PRIx64 " %" PRIu64 "\n", table[i].key - 1u, count);
        }
        if (fclose(f) == 0) rename(tmp_path, out_path);
    }
    pthread_mutex_unlock(&write_lock);
}

/* Waits one period, or less when QEMU exits: the exit never waits for a period to end. */
static void *writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wake_lock);
    while (!stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)(period_ms / 1000u);
        until.tv_nsec += (long)(period_ms % 1000u) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!stopping && pthread_cond_timedwait(&wake, &wake_lock, &until) == 0) {
        }
        if (stopping) break;
        pthread_mutex_unlock(&wake_lock);
        write_snapshot();
        pthread_mutex_lock(&wake_lock);
    }
    pthread_mutex_unlock(&wake_lock);
    return NULL;
}

static void at_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    pthread_mutex_lock(&wake_lock);
    stopping = true;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&wake_lock);
    pthread_join(writer, NULL);
    write_snapshot();
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) out_path = strdup(argv[i] + 4);
        else if (strncmp(argv[i], "period_ms=", 10) == 0) period_ms = (unsigned)strtoul(argv[i] + 10, NULL, 10);
        else if (strncmp(argv[i], "stop_at=", 8) == 0) {
            stop_address = strtoull(argv[i] + 8, NULL, 16);
            stop_set = true;
        } else if (strncmp(argv[i], "stop_hits=", 10) == 0) stop_hits = strtoull(argv[i] + 10, NULL, 10);
        else {
            qemu_plugin_outs("cyclelens insn-count plugin: unknown argument (use out=PATH,period_ms=N,stop_at=ADDRESS,stop_hits=N)\n");
            return -1;
        }
    }
    if (out_path == NULL || period_ms == 0 || stop_hits == 0) {
        qemu_plugin_outs("cyclelens insn-count plugin: out=PATH is required, period_ms and stop_hits must be > 0\n");
        return -1;
    }
    tmp_path = malloc(strlen(out_path) + 5);
    table = calloc(TABLE_SIZE, sizeof *table);
    if (tmp_path == NULL || table == NULL) return -1;
    sprintf(tmp_path, "%s.tmp", out_path);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    if (pthread_create(&writer, NULL, writer_main, NULL) != 0) return -1;
    return 0;
}
