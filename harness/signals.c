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
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* guards everything below */
static struct gt_report *g_rep;
static int g_started;
static pthread_t g_thread;
static struct sigaction g_prev[NSIGS];
static int g_installed[NSIGS];

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
    if (b == 0) return NULL; /* stop(): the command is over */
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
    int ok = pthread_create(&g_thread, NULL, signal_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!ok) {
        close(g_pipe[0]);
        close(g_pipe[1]);
        g_pipe[0] = g_pipe[1] = -1;
        return 0;
    }
    for (int i = 0; i < NSIGS; i++) {
        struct sigaction sa;
        g_installed[i] = 0;
        if (sigaction(g_sigs[i].sig, NULL, &g_prev[i]) != 0 || g_prev[i].sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART; /* the run's own system calls go on */
        g_installed[i] = sigaction(g_sigs[i].sig, &sa, NULL) == 0;
    }
    return 1;
}

/* The handlers as they were, then the thread ended and joined (a thread
 * left running at exit would keep its memory: valgrind's "possibly lost").
 * A signal that came before the handlers went is handled as usual: the
 * thread reads its byte before the stop byte. */
static void stop(void) {
    for (int i = 0; i < NSIGS; i++)
        if (g_installed[i]) sigaction(g_sigs[i].sig, &g_prev[i], NULL);
    unsigned char zero = 0;
    ssize_t w;
    do {
        w = write(g_pipe[1], &zero, 1);
    } while (w < 0 && errno == EINTR);
    pthread_join(g_thread, NULL);
    close(g_pipe[0]);
    close(g_pipe[1]);
    g_pipe[0] = g_pipe[1] = -1;
}

int gt_signals_report(struct gt_report *rep) {
    pthread_mutex_lock(&g_mu);
    int ok = 1;
    if (rep) {
        if (!g_started) g_started = start() ? 1 : -1;
        ok = g_started > 0;
        g_rep = ok ? rep : NULL;
        pthread_mutex_unlock(&g_mu);
        return ok;
    }
    g_rep = NULL;
    int running = g_started > 0;
    g_started = 0;
    /* unlocked: a signal being handled takes the mutex (and then ends the
     * process) before the thread can read the stop byte */
    pthread_mutex_unlock(&g_mu);
    if (running) stop();
    return ok;
}
