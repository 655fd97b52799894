#define _GNU_SOURCE
#include "engine/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void name_of(const gt_atomic_file *af, char *buf, size_t len) {
    snprintf(buf, len, "%s%s'%s'", af->what, af->what[0] ? " " : "", af->path);
}

gt_status gt_atomic_open(const char *path, const char *what, const char *hint,
                         gt_atomic_file *af) {
    memset(af, 0, sizeof *af);
    snprintf(af->what, sizeof af->what, "%s", what ? what : "");
    af->path = strdup(path);
    af->tmp = malloc(strlen(path) + 16);
    if (!af->path || !af->tmp) {
        gt_atomic_discard(af);
        return GT_ERR(GT_ERR_OOM, "no memory");
    }
    sprintf(af->tmp, "%s.tmp.XXXXXX", path);
    char name[1200];
    name_of(af, name, sizeof name);
    int fd = mkstemp(af->tmp);
    if (fd < 0) {
        gt_status s = GT_ERR(GT_ERR_IO, "cannot write %s: %s (creating '%s'%s%s)", name,
                             strerror(errno), af->tmp, hint && hint[0] ? "; " : "",
                             hint ? hint : "");
        free(af->tmp);
        af->tmp = NULL; /* nothing to remove */
        gt_atomic_discard(af);
        return s;
    }
    /* mkstemp makes the file private; outputs are as readable as any file
     * the user writes (a CI uploader may run as someone else) */
    mode_t mask = umask(022);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    af->f = fdopen(fd, "w");
    if (!af->f) {
        gt_status s = GT_ERR(GT_ERR_IO, "cannot write %s: %s", name, strerror(errno));
        close(fd);
        gt_atomic_discard(af);
        return s;
    }
    return GT_OK;
}

static gt_status commit(gt_atomic_file *af, int sync) {
    char name[1200];
    name_of(af, name, sizeof name);
    int bad = fflush(af->f) != 0 || ferror(af->f) || (sync && fsync(fileno(af->f)) != 0);
    int e = errno;
    if (fclose(af->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    af->f = NULL;
    gt_status s = GT_OK;
    if (bad) {
        s = GT_ERR(GT_ERR_IO, "cannot write %s: %s; the previous file is intact", name,
                   strerror(e));
    } else if (rename(af->tmp, af->path) != 0) {
        s = GT_ERR(GT_ERR_IO, "cannot rename '%s' to '%s': %s; the previous file is intact",
                   af->tmp, af->path, strerror(errno));
    } else {
        free(af->tmp);
        af->tmp = NULL; /* renamed: nothing to remove */
        /* the rename is durable only once the directory is synced */
        char *dup = sync ? strdup(af->path) : NULL;
        if (dup) {
            int dfd = open(dirname(dup), O_RDONLY | O_DIRECTORY);
            if (dfd >= 0) {
                fsync(dfd);
                close(dfd);
            }
            free(dup);
        }
    }
    gt_atomic_discard(af);
    return s;
}

gt_status gt_atomic_commit(gt_atomic_file *af) { return commit(af, 1); }

gt_status gt_atomic_commit_unsynced(gt_atomic_file *af) { return commit(af, 0); }

void gt_atomic_discard(gt_atomic_file *af) {
    if (af->f) fclose(af->f);
    if (af->tmp) unlink(af->tmp);
    free(af->tmp);
    free(af->path);
    memset(af, 0, sizeof *af);
}

void gt_xml_escape(FILE *f, const char *s) {
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        switch (ch) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            /* XML 1.0 forbids other control characters even as references */
            if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
                fputc('?', f);
            else
                fputc(ch, f);
        }
    }
}
