/* SIGTERM, SIGINT, SIGHUP: the report marked incomplete, then the signal's
 * own ending (signals.h). */
#define _GNU_SOURCE
#include "harness/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/status.h"
#include "reports/report.h"

static const struct {
    int sig;
    const char *name;
} g_sigs[] = {{SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"}, {SIGHUP, "SIGHUP"}};
enum { NSIGS = sizeof g_sigs / sizeof g_sigs[0] };

static int g_pipe[2] = {-1, -1};
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* guards g_rep and g_started */
static struct gt_report *g_rep;
static int g_started;

/* The only thing done in signal context: write(2) is async-signal-safe. */
static void on_signal(int sig) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t w = write(g_pipe[1], &b, 1);
    (void)w; /* a full pipe: a signal is already on its way to the thread */
    errno = saved;
}

static const char *sig_name(int sig) {
    for (int i = 0; i < NSIGS; i++)
        if (g_sigs[i].sig == sig) return g_sigs[i].name;
    return "?";
}

static void *signal_main(void *arg) {
    (void)arg;
    unsigned char b = 0;
    for (;;) {
        ssize_t n = read(g_pipe[0], &b, 1);
        if (n == 1) break;
        if (n < 0 && errno == EINTR) continue;
        return NULL;
    }
    int sig = b;
    /* held until the process ends: the report cannot be freed under us, and
     * no later registration can start another write */
    pthread_mutex_lock(&g_mu);
    if (g_rep) {
        char reason[96];
        snprintf(reason, sizeof reason, "terminated by signal %d (%s)", sig, sig_name(sig));
        int written = 0;
        if (gt_report_write_interrupted(g_rep, reason, &written) != GT_OK)
            fprintf(stderr, "gauntlet: %s: could not mark the report incomplete: %s\n", reason,
                    gt_last_error());
        else if (written)
            fprintf(stderr, "gauntlet: %s: the report is marked incomplete\n", reason);
        fflush(stderr);
    }
    /* the signal's own ending: the default action, delivered to a thread
     * that does not block it (this one blocks them all) */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
    kill(getpid(), sig);
    /* should every other thread block it, end the way a shell reports it */
    struct timespec ts = {2, 0};
    nanosleep(&ts, NULL);
    _exit(128 + sig);
    return NULL;
}

static int start(void) {
    if (pipe2(g_pipe, O_CLOEXEC) != 0) return 0;
    /* the thread with every signal blocked; the handlers run on the others */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t ta;
    pthread_t t;
    int ok = pthread_attr_init(&ta) == 0;
    if (ok) {
        pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&t, &ta, signal_main, NULL) == 0;
        pthread_attr_destroy(&ta);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!ok) {
        close(g_pipe[0]);
        close(g_pipe[1]);
        g_pipe[0] = g_pipe[1] = -1;
        return 0;
    }
    for (int i = 0; i < NSIGS; i++) {
        struct sigaction sa, prev;
        if (sigaction(g_sigs[i].sig, NULL, &prev) != 0 || prev.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART; /* the run's own system calls go on */
        sigaction(g_sigs[i].sig, &sa, NULL);
    }
    return 1;
}

int gt_signals_report(struct gt_report *rep) {
    pthread_mutex_lock(&g_mu);
    if (!g_started) g_started = start() ? 1 : -1;
    g_rep = g_started > 0 ? rep : NULL;
    int ok = g_started > 0;
    pthread_mutex_unlock(&g_mu);
    return ok;
}
