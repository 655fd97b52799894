/* The HTML view of reports (docs/html-report.md): one self-contained page
 * that shows one or more gauntlet reports side by side and opens offline.
 *
 * The page embeds every report (as JSON in a
 * <script type="application/json" id="report-N"> element, N from 0 in the
 * order given), by default as much of it as the page draws (each metric as
 * its value, the results' numbers to 6 significant digits, no samples, no
 * hwloc XML), and draws its tables and SVG charts with an inline script: no
 * network, no external fonts, scripts or style sheets. With two reports or
 * more, the change cells carry gauntlet compare's verdicts
 * (reports/html_verdicts.h).
 */
#ifndef GT_HTML_H
#define GT_HTML_H

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks that the file at `path` is a report this build can read: what
 * gt_report_read (reports/read.h) accepts, with its errors (GT_ERR_IO
 * unreadable or a directory, GT_ERR_INVALID not JSON or not a valid report)
 * and its message, which names the file, the place and the problem. compare
 * reads its inputs with the same function: a file one refuses the other
 * refuses too. */
gt_status gt_html_check_report(const char *path);

/* Writes the page for the n reports at paths[0..n) to out_path. Every input
 * is checked first (gt_html_check_report): when one fails nothing is
 * written. title (may be NULL: "gauntlet report") is the page's heading.
 * The file is replaced atomically (temporary file in the same directory,
 * fsync, rename), so a failed write leaves the previous file intact.
 * full = 0 embeds what the page draws (each metric as its value, to 6
 * significant digits: the units, samples and spreads are for `compare`,
 * which reads the report files), full = 1 embeds the reports unchanged.
 * Returns GT_ERR_INVALID for n < 1 or a bad input, GT_ERR_IO when a file
 * cannot be read or written, GT_ERR_OOM. */
gt_status gt_html_write(const char *out_path, const char *const *paths, int n, const char *title,
                        int full);

/* The run history on the page (reports/html_history.c, docs/history.md): per
 * case and metric of the history database a trend plot of the runs' levels
 * with the samples' spread and the change points marked. db NULL: none. */
typedef struct gt_html_history {
    const char *db;        /* a history database (reports/history.h) */
    const char *case_name; /* only this case (or SUITE/CASE); NULL: every case */
    const char *metric;    /* only this metric; NULL: every metric */
} gt_html_history;

/* gt_html_write with the history section (h NULL or h->db NULL: without):
 * n may then be 0 (a page of the history alone). The database is opened as
 * gt_history_open does (a bad one is refused, nothing is written). */
gt_status gt_html_write_history(const char *out_path, const char *const *paths, int n,
                                const char *title, int full, const gt_html_history *h);

#ifdef __cplusplus
}
#endif
#endif
