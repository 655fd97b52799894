/* Files replaced atomically, and text escaping shared by the writers.
 *
 * gt_atomic_open creates a temporary file beside the destination (same
 * directory, so rename is atomic); gt_atomic_commit flushes, fsyncs,
 * renames it over the destination and fsyncs the directory. A failure at
 * any point removes the temporary file and leaves the previous destination
 * untouched, and the message says so.
 */
#ifndef GT_FILEIO_H
#define GT_FILEIO_H

#include <stdio.h>

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_atomic_file {
    FILE *f;          /* write here */
    char *tmp;        /* owned */
    char *path;       /* owned */
    char what[48];    /* "report", "JUnit file", "" : for messages */
} gt_atomic_file;

/* what names the file in messages ("cannot write report 'r.json': ...");
 * hint says what to do when it cannot even be created ("choose a writable
 * --report path"); both may be "". GT_ERR_IO / GT_ERR_OOM. */
gt_status gt_atomic_open(const char *path, const char *what, const char *hint,
                         gt_atomic_file *af);
/* Completes the replacement and releases af, whatever the outcome. */
gt_status gt_atomic_commit(gt_atomic_file *af);
/* The same without either fsync: as atomic for every reader (the rename
 * replaces the file whole), durable only once the system writes it back.
 * For a process about to be killed, where milliseconds decide whether the
 * file is replaced at all (a SIGKILL follows mpirun's SIGTERM at once). */
gt_status gt_atomic_commit_unsynced(gt_atomic_file *af);
/* Gives up: removes the temporary file, releases af. */
void gt_atomic_discard(gt_atomic_file *af);

/* Writes s with &, <, >, " and ' escaped and control characters XML 1.0
 * forbids replaced by '?': safe in XML and HTML text and attribute values.
 * NULL writes nothing. */
void gt_xml_escape(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif
#endif
