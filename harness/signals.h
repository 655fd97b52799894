/* What a run does when it is asked to end (SIGTERM from scancel, mpirun or
 * a CI timeout; SIGINT from Ctrl-C; SIGHUP): its report is written once
 * more, marked incomplete with "terminated by signal N (SIGNAME)" as the
 * reason (docs/reliability.md, "Incomplete reports"), and then the process
 * ends by that signal as it would have without gauntlet's help.
 *
 * The report cannot be written in the signal handler (jansson, stdio and
 * malloc are not async-signal-safe), nor left to the main thread, which may
 * be blocked in a collective whose peer has died. So the handler only
 * writes the signal's number to a pipe; a thread of its own (every signal
 * blocked there) reads it and calls gt_report_write_interrupted, which
 * rewrites the report's last written text, never the document the main
 * thread is building. A signal that was ignored when gauntlet started
 * (nohup, a background job's SIGINT) stays ignored.
 */
#ifndef GT_HARNESS_SIGNALS_H
#define GT_HARNESS_SIGNALS_H

struct gt_report;

/* rep not NULL: installs the handlers and starts the thread (unless they
 * are), and makes rep the report a signal marks (a rank that writes no
 * report passes its report without a path: the signal then only ends the
 * process, as it always did). NULL: the handlers as they were before and
 * the thread ended; call it before freeing the report. Returns 0 when the
 * thread could not be started (then signals act as they always did). */
int gt_signals_report(struct gt_report *rep);

#endif
