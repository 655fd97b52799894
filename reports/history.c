/* Run history in SQLite (reports/history.h, docs/history.md). */
#define _GNU_SOURCE
#include "reports/history.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/stats.h"
#include "gt_config.h"

/* ---- what needs no database: change points ------------------------------------- */

/* The runs pts[lo..hi) as compare's cut arrays. vals/cut sized by the caller. */
static int pack_runs(const gt_history_point *pts, size_t lo, size_t hi, double *vals, size_t *cut) {
    size_t k = 0;
    int runs = 0;
    cut[0] = 0;
    for (size_t i = lo; i < hi; i++) {
        memcpy(vals + k, pts[i].samples, pts[i].n_samples * sizeof *vals);
        k += pts[i].n_samples;
        cut[++runs] = k;
    }
    return runs;
}

typedef struct cp_test {
    gt_verdict v;
    double before, after, rel, p;
    int nb, na;
} cp_test;

/* compare's verdict of runs [lo, k) against [k, hi). */
static gt_status test_at(const gt_history_point *pts, size_t lo, size_t k, size_t hi,
                         int higher_better, const char *unit, const gt_compare_options *o,
                         cp_test *t) {
    size_t nb = 0, na = 0;
    for (size_t i = lo; i < k; i++)
        nb += pts[i].n_samples;
    for (size_t i = k; i < hi; i++)
        na += pts[i].n_samples;
    double *vb = malloc((nb + 1) * sizeof *vb), *va = malloc((na + 1) * sizeof *va);
    size_t *cb = malloc((k - lo + 1) * sizeof *cb), *ca = malloc((hi - k + 1) * sizeof *ca);
    if (!vb || !va || !cb || !ca) {
        free(vb), free(va), free(cb), free(ca);
        return GT_ERR(GT_ERR_OOM, "no memory for the change points");
    }
    t->nb = pack_runs(pts, lo, k, vb, cb);
    t->na = pack_runs(pts, k, hi, va, ca);
    gt_compare_method m;
    t->v = gt_compare_runs(vb, cb, t->nb, va, ca, t->na, higher_better, unit, o, &m, &t->before,
                           &t->after, &t->rel, &t->p);
    free(vb), free(va), free(cb), free(ca);
    return GT_OK;
}

static int moved(gt_verdict v) {
    return v == GT_VERDICT_FASTER || v == GT_VERDICT_SLOWER;
}

gt_status gt_history_change_points(const gt_history_point *pts, size_t n, int higher_better,
                                   const char *unit, const gt_compare_options *opt,
                                   gt_history_change **cps, size_t *ncp) {
    *cps = NULL;
    *ncp = 0;
    gt_compare_options o = opt ? *opt : gt_compare_defaults();
    const size_t W = GT_HISTORY_WINDOW;
    size_t start = 0, cap = 0;
    for (size_t k = 1; k < n;) {
        size_t lo = k - start > W ? k - W : start, hi = k + W < n ? k + W : n;
        cp_test t;
        GT_TRY(test_at(pts, lo, k, hi, higher_better, unit, &o, &t));
        if (!moved(t.v)) {
            k++;
            continue;
        }
        /* the level moved around k: the best place is where the test is
         * strongest, among the candidates up to a window on that also move
         * the same way */
        size_t best = k;
        cp_test bt = t;
        for (size_t j = k + 1; j < n && j < k + W; j++) {
            size_t lj = j - start > W ? j - W : start, hj = j + W < n ? j + W : n;
            cp_test tj;
            GT_TRY(test_at(pts, lj, j, hj, higher_better, unit, &o, &tj));
            if (tj.v == t.v && tj.p < bt.p) {
                best = j;
                bt = tj;
            }
        }
        if (*ncp == cap) {
            cap = cap ? 2 * cap : 4;
            gt_history_change *g = realloc(*cps, cap * sizeof *g);
            if (!g) {
                free(*cps);
                *cps = NULL;
                *ncp = 0;
                return GT_ERR(GT_ERR_OOM, "no memory for the change points");
            }
            *cps = g;
        }
        (*cps)[(*ncp)++] = (gt_history_change){.at = best,
                                               .verdict = bt.v,
                                               .before = bt.before,
                                               .after = bt.after,
                                               .rel = bt.rel,
                                               .p = bt.p,
                                               .runs_before = bt.nb,
                                               .runs_after = bt.na};
        start = best;
        k = best + 1;
    }
    return GT_OK;
}

#if !GT_HAVE_SQLITE
/* ---- built without SQLite -------------------------------------------------------- */

static gt_status no_sqlite(void) {
    return GT_ERR(GT_ERR_UNSUPPORTED,
                  "this gauntlet was built without SQLite, so it keeps no run history: install "
                  "libsqlite3-dev (ci/deps.sh does) and rebuild (cmake finds it; "
                  "-DGT_WITH_SQLITE=OFF turns it off)");
}
int gt_history_available(void) {
    return 0;
}
gt_status gt_history_open(const char *path, int create, gt_history **out) {
    (void)path, (void)create;
    *out = NULL;
    return no_sqlite();
}
void gt_history_close(gt_history *h) {
    (void)h;
}
gt_status gt_history_add(gt_history *h, const gt_report_doc *d, const char *source, int64_t *id,
                         int *added) {
    (void)h, (void)d, (void)source, (void)id, (void)added;
    return no_sqlite();
}
gt_status gt_history_add_file(gt_history *h, const char *path, int64_t *id, int *added) {
    (void)h, (void)path, (void)id, (void)added;
    return no_sqlite();
}
gt_status gt_history_filter_check(const gt_history_filter *f) {
    (void)f;
    return GT_OK;
}
gt_status gt_history_print_runs(gt_history *h, const gt_history_filter *f, size_t limit, FILE *out,
                                size_t *n) {
    (void)h, (void)f, (void)limit, (void)out, (void)n;
    return no_sqlite();
}
gt_status gt_history_series_get(gt_history *h, const gt_history_filter *f, const char *case_name,
                                const char *metric, const gt_compare_options *opt,
                                gt_history_series **out, size_t *n) {
    (void)h, (void)f, (void)case_name, (void)metric, (void)opt;
    *out = NULL;
    *n = 0;
    return no_sqlite();
}
void gt_history_series_free(gt_history_series *s, size_t n) {
    (void)s, (void)n;
}
void gt_history_print_series(const gt_history_series *s, size_t n, FILE *out) {
    (void)s, (void)n, (void)out;
}
void gt_history_class_of(const gt_report_doc *d, gt_history_class *c) {
    (void)d;
    memset(c, 0, sizeof *c);
}
gt_status gt_history_gate(gt_history *h, const char *new_path, const gt_compare_options *opt,
                          gt_compare **out, int64_t *base_id, int *base_runs) {
    (void)h, (void)new_path, (void)opt, (void)base_id;
    *base_runs = 0;
    *out = NULL;
    return no_sqlite();
}
gt_status gt_history_check(gt_history *h, int64_t *runs) {
    (void)h, (void)runs;
    return no_sqlite();
}
gt_status gt_history_run_report(gt_history *h, int64_t run, gt_report_doc **out) {
    (void)h, (void)run;
    *out = NULL;
    return no_sqlite();
}

#else
/* ---- the database ------------------------------------------------------------------ */

#include <jansson.h>
#include <sqlite3.h>

struct gt_history {
    sqlite3 *db;
    char *path;
};

int gt_history_available(void) {
    return 1;
}

/* The schema, version 1 (docs/history.md describes every column). */
static const char g_schema[] =
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY,"
    " run_id TEXT NOT NULL UNIQUE,"
    " start TEXT NOT NULL, start_unix REAL, end_time TEXT, added_unix REAL NOT NULL,"
    " git_revision TEXT, host TEXT, host_kind TEXT, topology TEXT, backends TEXT,"
    " gpu TEXT, driver TEXT, cuda TEXT, nccl TEXT,"
    " n_results INTEGER NOT NULL, n_pass INTEGER, n_fail INTEGER, n_skip INTEGER,"
    " n_error INTEGER, source TEXT, report TEXT NOT NULL);"
    "CREATE INDEX runs_class ON runs(host_kind, topology, backends, id);"
    "CREATE INDEX runs_start ON runs(start);"
    "CREATE TABLE env ("
    " run INTEGER NOT NULL REFERENCES runs(id), key TEXT NOT NULL, value TEXT,"
    " PRIMARY KEY (run, key)) WITHOUT ROWID;"
    "CREATE TABLE results ("
    " id INTEGER PRIMARY KEY, run INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL,"
    " suite TEXT, case_name TEXT, topology TEXT, backend TEXT, status TEXT,"
    " identity TEXT NOT NULL);"
    "CREATE INDEX results_run ON results(run);"
    "CREATE TABLE metrics ("
    " result INTEGER NOT NULL REFERENCES results(id), run INTEGER NOT NULL,"
    " case_name TEXT NOT NULL, name TEXT NOT NULL, unit TEXT, higher_better INTEGER,"
    " value REAL, n INTEGER, samples BLOB);"
    "CREATE INDEX metrics_series ON metrics(case_name, name, run);";

static char *xstrdup(const char *s) {
    return strdup(s ? s : "");
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}

/* An SQLite failure as a gauntlet error naming the database and what to do. */
static gt_status db_err(const gt_history *h, int rc, const char *doing) {
    int prim = rc & 0xff;
    const char *msg = h && h->db ? sqlite3_errmsg(h->db) : sqlite3_errstr(rc);
    const char *path = h ? h->path : "?";
    if (prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB)
        return GT_ERR(GT_ERR_INVALID,
                      "history database '%s' is corrupt (%s, while %s): it is left as it is; "
                      "restore it from a backup, or record into a new file (--history NEW.db)",
                      path, msg, doing);
    if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED)
        return GT_ERR(GT_ERR_IO,
                      "history database '%s' stayed locked by another writer for %d s while %s "
                      "(%s): try again when it has finished",
                      path, GT_HISTORY_BUSY_MS / 1000, doing, msg);
    if (prim == SQLITE_FULL)
        return GT_ERR(GT_ERR_IO,
                      "history database '%s': the disk is full while %s (nothing of "
                      "this report was recorded)",
                      path, doing);
    if (prim == SQLITE_READONLY || prim == SQLITE_CANTOPEN || prim == SQLITE_PERM ||
        prim == SQLITE_IOERR)
        return GT_ERR(GT_ERR_IO,
                      "history database '%s': cannot %s (%s): check the file and "
                      "its directory are writable",
                      path, doing, msg);
    return GT_ERR(GT_ERR_IO, "history database '%s': %s failed: %s", path, doing, msg);
}

static int exec(gt_history *h, const char *sql) {
    return sqlite3_exec(h->db, sql, NULL, NULL, NULL);
}

/* One integer from a statement (a PRAGMA); rc SQLite's. */
static int query_int(gt_history *h, const char *sql, long long *v) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *v = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            *v = 0;
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

void gt_history_close(gt_history *h) {
    if (!h) return;
    sqlite3_close_v2(h->db);
    free(h->path);
    free(h);
}

/* Creates the schema in an empty database; another process creating it at
 * the same moment waits (BEGIN IMMEDIATE) and then finds it there. */
static gt_status init_schema(gt_history *h) {
    int rc = exec(h, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) return db_err(h, rc, "creating the schema");
    long long uv = 0, tables = 0;
    rc = query_int(h, "PRAGMA user_version", &uv);
    if (rc == SQLITE_OK) rc = query_int(h, "SELECT count(*) FROM sqlite_master", &tables);
    if (rc == SQLITE_OK && uv == 0 && tables == 0) {
        char pragmas[96];
        snprintf(pragmas, sizeof pragmas, "PRAGMA application_id = %d; PRAGMA user_version = %d",
                 GT_HISTORY_APP_ID, GT_HISTORY_SCHEMA_VERSION);
        rc = exec(h, g_schema);
        if (rc == SQLITE_OK) rc = exec(h, pragmas);
    }
    if (rc == SQLITE_OK) rc = exec(h, "COMMIT");
    if (rc != SQLITE_OK) {
        gt_status s = db_err(h, rc, "creating the schema");
        exec(h, "ROLLBACK");
        return s;
    }
    return GT_OK;
}

/* PRAGMA journal_mode = WAL. Another process switching the same new file at
 * the same moment makes SQLite answer busy at once, without the busy handler:
 * tried again every 10 ms up to GT_HISTORY_BUSY_MS. */
static int wal_mode(gt_history *h) {
    int rc = SQLITE_BUSY;
    for (int waited = 0; waited <= GT_HISTORY_BUSY_MS; waited += 10) {
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(h->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
        if (rc == SQLITE_OK) {
            rc = sqlite3_step(st);
            if (rc == SQLITE_ROW) rc = SQLITE_OK;
        }
        sqlite3_finalize(st);
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return rc;
}

/* Rows recorded before a result was renamed (gt_report_renames, reports/
 * read.h) take the new name, as the reader gives an old report's results
 * their new names: a series goes on across the rename. The case names of
 * results and metrics and the identities (their case part, and params.model
 * in them) change, in one transaction, and only where such a row exists
 * (found through the metrics index; reports recorded since were renamed
 * when read). */
static gt_status rename_recorded(gt_history *h) {
    for (const gt_report_rename *r = gt_report_renames; r->old_name; r++) {
        long long hits = 0;
        char *probe = xprintf("SELECT count(*) FROM (SELECT 1 FROM metrics WHERE case_name = '%s' "
                              "OR (case_name >= '%s/' AND case_name < '%s0') LIMIT 1)",
                              r->old_name, r->old_name, r->old_name);
        if (!probe) return GT_ERR(GT_ERR_OOM, "no memory");
        int rc = query_int(h, probe, &hits);
        free(probe);
        if (rc != SQLITE_OK) return db_err(h, rc, "looking for results recorded under an old name");
        if (!hits) continue;
        /* '%s' are the rename table's own names: no quote in them */
        const char *o = r->old_name, *n = r->new_name;
        char *sql = xprintf(
            "BEGIN IMMEDIATE;"
            "UPDATE results SET identity = replace(replace(identity, char(31) || case_name || "
            "char(31), char(31) || '%s' || substr(case_name, %zu) || char(31)), "
            "'\"model\":\"%s\"', '\"model\":\"%s\"'), case_name = '%s' || substr(case_name, %zu) "
            "WHERE case_name = '%s' OR (case_name >= '%s/' AND case_name < '%s0');"
            "UPDATE metrics SET case_name = '%s' || substr(case_name, %zu) "
            "WHERE case_name = '%s' OR (case_name >= '%s/' AND case_name < '%s0');"
            "COMMIT",
            n, strlen(o) + 1, o, n, n, strlen(o) + 1, o, o, o, n, strlen(o) + 1, o, o, o);
        if (!sql) return GT_ERR(GT_ERR_OOM, "no memory");
        rc = exec(h, sql);
        free(sql);
        if (rc != SQLITE_OK) {
            gt_status s = db_err(h, rc, "renaming results recorded under an old name");
            exec(h, "ROLLBACK");
            return s;
        }
    }
    return GT_OK;
}

gt_status gt_history_open(const char *path, int create, gt_history **out) {
    *out = NULL;
    if (!path || !path[0]) return GT_ERR(GT_ERR_INVALID, "no history database given");
    struct stat stt;
    if (stat(path, &stt) != 0) {
        if (errno != ENOENT || !create)
            return GT_ERR(GT_ERR_IO,
                          errno == ENOENT
                              ? "no history database at '%s': record runs into it with "
                                "--history %s (gauntlet run, gauntlet train) or gauntlet history "
                                "add %s REPORT.json"
                              : "cannot open history database '%s': %s",
                          path, errno == ENOENT ? path : strerror(errno), path);
    } else if (S_ISDIR(stt.st_mode)) {
        return GT_ERR(GT_ERR_IO,
                      "history database '%s' is a directory: give a file, e.g. %s/"
                      "history.db",
                      path, path);
    } else if (stt.st_size > 0) {
        /* anything else is refused before SQLite touches it */
        char head[16] = {0};
        FILE *f = fopen(path, "rb");
        if (!f)
            return GT_ERR(GT_ERR_IO, "cannot read history database '%s': %s", path,
                          strerror(errno));
        size_t got = fread(head, 1, sizeof head, f);
        fclose(f);
        if (got < sizeof head || memcmp(head, "SQLite format 3", 16) != 0)
            return GT_ERR(GT_ERR_INVALID,
                          "'%s' is not an SQLite database (%s): not a gauntlet run history, "
                          "so it is left untouched; give another --history path",
                          path, got < sizeof head ? "too short" : "its first bytes differ");
    }
    gt_history *h = calloc(1, sizeof *h);
    if (!h || !(h->path = strdup(path))) {
        free(h);
        return GT_ERR(GT_ERR_OOM, "no memory");
    }
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, &h->db, flags, NULL);
    if (rc != SQLITE_OK) {
        gt_status s = db_err(h, rc, "open it");
        gt_history_close(h);
        return s;
    }
    sqlite3_extended_result_codes(h->db, 1);
    sqlite3_busy_timeout(h->db, GT_HISTORY_BUSY_MS);
    long long uv = 0, app = 0, tables = 0;
    /* one statement, one snapshot: another process creating the schema
     * meanwhile (init_schema commits tables and version at once) is seen
     * before or after, never half (two trainings recording into a new
     * database at the same moment read version 0, then the first's tables,
     * when these were three statements) */
    sqlite3_stmt *hd = NULL;
    rc = sqlite3_prepare_v2(h->db,
                            "SELECT (SELECT user_version FROM pragma_user_version), "
                            "(SELECT application_id FROM pragma_application_id), "
                            "(SELECT count(*) FROM sqlite_master)",
                            -1, &hd, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(hd)) == SQLITE_ROW) {
        uv = sqlite3_column_int64(hd, 0);
        app = sqlite3_column_int64(hd, 1);
        tables = sqlite3_column_int64(hd, 2);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(hd);
    gt_status s = GT_OK;
    if (rc != SQLITE_OK) {
        s = db_err(h, rc, "reading its schema");
    } else if (uv == 0 && tables > 0) {
        s = GT_ERR(GT_ERR_INVALID,
                   "'%s' is an SQLite database of another program (it has tables but no "
                   "gauntlet history schema): left untouched; give another --history path",
                   path);
    } else if (uv > 0 && app != GT_HISTORY_APP_ID) {
        s = GT_ERR(GT_ERR_INVALID,
                   "'%s' is an SQLite database of another program (application_id 0x%llx, "
                   "user_version %lld): left untouched; give another --history path",
                   path, (unsigned long long)app, uv);
    } else if (uv > GT_HISTORY_SCHEMA_VERSION) {
        s = GT_ERR(GT_ERR_INVALID,
                   "history database '%s' has schema version %lld, newer than this gauntlet's "
                   "%d: it is left untouched; use the newer gauntlet that wrote it",
                   path, uv, GT_HISTORY_SCHEMA_VERSION);
    } else {
        /* WAL: readers never block the writer and a writer waits for another
         * one; it stays set in the file */
        rc = wal_mode(h);
        /* NORMAL in WAL mode: a commit survives the process dying (kill -9);
         * a power cut may lose the last commits but never leaves a half one */
        if (rc == SQLITE_OK) rc = exec(h, "PRAGMA synchronous = NORMAL");
        if (rc != SQLITE_OK)
            s = db_err(h, rc, "switching it to WAL mode");
        else if (uv == 0)
            s = init_schema(h);
        else
            s = rename_recorded(h);
    }
    if (s != GT_OK) {
        gt_history_close(h);
        return s;
    }
    *out = h;
    return GT_OK;
}

/* ---- what a run is recorded with ---------------------------------------------- */

static const char *jstr(json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Fingerprint fields that differ between two runs of the same stack (the GPU's
 * clocks and temperature, measured peaks, the hwloc XML the digest stands for,
 * each rank's CPU binding): they would show at every change point. */
static int env_skipped(const char *key) {
    static const char *const skip[] = {"state", "peaks", "topology_xml", "binding", NULL};
    for (int i = 0; skip[i]; i++)
        if (strcmp(key, skip[i]) == 0) return 1;
    return 0;
}

/* env.job names its own identity members (scheduler, launcher, ranks,
 * layout...): only those say what changed; its job id, node list and hosts
 * differ every run. */
static int job_identity(json_t *job, const char *key) {
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(job, "identity"), i, x) {
        const char *m = json_string_value(x);
        if (m && strcmp(m, key) == 0) return 1;
    }
    return 0;
}

typedef int (*field_fn)(void *ctx, const char *key, const char *value);

/* Every scalar of v as "prefix.key[i]" = text. */
static int flatten(json_t *v, char *key, size_t cap, size_t len, field_fn fn, void *ctx) {
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        int job = strcmp(key, "env.job") == 0;
        json_object_foreach(v, k, x) {
            if (env_skipped(k) || (job && !job_identity(v, k))) continue;
            int w = snprintf(key + len, cap - len, "%s%s", len ? "." : "", k);
            if (w < 0 || (size_t)w >= cap - len) continue;
            int rc = flatten(x, key, cap, len + (size_t)w, fn, ctx);
            if (rc) return rc;
        }
        key[len] = '\0';
        return 0;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            int w = snprintf(key + len, cap - len, "[%zu]", i);
            if (w < 0 || (size_t)w >= cap - len) continue;
            int rc = flatten(x, key, cap, len + (size_t)w, fn, ctx);
            if (rc) return rc;
        }
        key[len] = '\0';
        return 0;
    }
    char num[64];
    const char *text = num;
    if (json_is_string(v))
        text = json_string_value(v);
    else if (json_is_integer(v))
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(num, sizeof num, "%.17g", json_real_value(v));
    else if (json_is_true(v))
        text = "true";
    else if (json_is_false(v))
        text = "false";
    else
        text = "null";
    return fn(ctx, key, text);
}

/* Appends s to a comma-separated set when it is not in it yet. */
static void set_add(char *set, size_t cap, const char *s) {
    size_t n = strlen(s);
    for (const char *p = set; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, s, n) == 0) return;
        if (!e) break;
        p = e + 1;
    }
    size_t l = strlen(set);
    if (l + n + 2 > cap) return;
    if (l) set[l++] = ',';
    memcpy(set + l, s, n + 1);
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}
static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void gt_history_class_of(const gt_report_doc *d, gt_history_class *c) {
    memset(c, 0, sizeof *c);
    json_t *env = json_object_get(gt_report_doc_json(d), "env");
    json_t *cpu = json_object_get(env, "cpu"), *gpus = json_object_get(env, "gpus");
    char g[128] = "no GPU";
    size_t ng = json_array_size(gpus);
    if (ng > 0) snprintf(g, sizeof g, "%zu x %s", ng, jstr(json_array_get(gpus, 0), "name"));
    /* threads per rank are part of the class (a 1-thread run is no baseline
     * for a 2-thread one); reports from before env.threads say "threads ?" */
    json_t *thr = json_object_get(json_object_get(env, "threads"), "per_rank");
    char t[32] = "threads ?";
    if (thr) snprintf(t, sizeof t, "%lld thread(s) per rank", (long long)json_integer_value(thr));
    snprintf(c->host_kind, sizeof c->host_kind, "%s, %lld logical CPUs; %s; %s",
             cpu ? jstr(cpu, "model") : "unknown CPU",
             (long long)json_integer_value(json_object_get(cpu, "logical")), g, t);
    /* topologies as numbers, in order; the backends sorted */
    int topos[64], nt = 0;
    char *bes[16];
    int nb = 0;
    size_t n = gt_report_doc_result_count(d);
    for (size_t i = 0; i < n; i++) {
        const gt_report_result *r = gt_report_doc_result(d, i);
        int t = atoi(r->topology), seen = 0;
        for (int k = 0; k < nt; k++)
            seen |= topos[k] == t;
        if (!seen && nt < 64) topos[nt++] = t;
        seen = 0;
        for (int k = 0; k < nb; k++)
            seen |= strcmp(bes[k], r->backend) == 0;
        if (!seen && nb < 16) bes[nb++] = (char *)r->backend;
    }
    qsort(topos, (size_t)nt, sizeof *topos, cmp_int);
    qsort(bes, (size_t)nb, sizeof *bes, cmp_str);
    const char *digest = jstr(env, "topology_digest");
    int w =
        snprintf(c->topology, sizeof c->topology, "%s; ranks ", digest[0] ? digest : "no digest");
    for (int k = 0; k < nt && w > 0 && (size_t)w < sizeof c->topology; k++)
        w += snprintf(c->topology + w, sizeof c->topology - (size_t)w, "%s%d", k ? "," : "",
                      topos[k]);
    for (int k = 0; k < nb; k++)
        set_add(c->backends, sizeof c->backends, bes[k]);
}

typedef struct env_ins {
    sqlite3_stmt *st;
    int rc;
} env_ins;

static int env_row(void *ctx, const char *key, const char *value) {
    env_ins *e = ctx;
    sqlite3_bind_text(e->st, 2, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(e->st, 3, value, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(e->st);
    sqlite3_reset(e->st);
    /* a key twice (a flattened name clash): the first stays */
    if (rc != SQLITE_DONE && (rc & 0xff) != SQLITE_CONSTRAINT) {
        e->rc = rc;
        return 1;
    }
    return 0;
}

typedef struct keyed_id {
    char *key;
    size_t idx;
} keyed_id;

static int cmp_keyed_id(const void *a, const void *b) {
    const keyed_id *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Each result's identity; the k-th repeat of one gets "#k" (as compare does). */
static char **identities(const gt_report_doc *d, size_t n) {
    char **ids = calloc(n ? n : 1, sizeof *ids);
    keyed_id *k = calloc(n ? n : 1, sizeof *k);
    if (!ids || !k) {
        free(ids);
        free(k);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        ids[i] = gt_compare_identity(gt_report_doc_result(d, i));
        if (!ids[i]) goto oom;
        k[i] = (keyed_id){ids[i], i};
    }
    qsort(k, n, sizeof *k, cmp_keyed_id);
    int *rep = calloc(n ? n : 1, sizeof *rep);
    if (!rep) goto oom;
    for (size_t i = 0; i < n; i++)
        rep[k[i].idx] = i > 0 && strcmp(k[i].key, k[i - 1].key) == 0 ? rep[k[i - 1].idx] + 1 : 1;
    for (size_t i = 0; i < n; i++) {
        if (rep[i] < 2) continue;
        char *s = xprintf("%s#%d", ids[i], rep[i]);
        if (!s) {
            free(rep);
            goto oom;
        }
        free(ids[i]);
        ids[i] = s;
    }
    free(rep);
    free(k);
    return ids;
oom:
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    free(k);
    return NULL;
}

/* Test support (docs/history.md): GT_HISTORY_TEST_PAUSE_MS=N sleeps N ms
 * halfway through a report's transaction, after saying so on stderr, so that
 * the tests can start a second writer or kill this one mid-write. */
static void test_pause(void) {
    const char *v = getenv("GT_HISTORY_TEST_PAUSE_MS");
    if (!v || !v[0]) return;
    long ms = strtol(v, NULL, 10);
    if (ms <= 0) return;
    fprintf(stderr, "history: paused mid-write for %ld ms\n", ms);
    fflush(stderr);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static gt_status add_tx(gt_history *h, const gt_report_doc *d, const char *source, int64_t *id,
                        int *added);

gt_status gt_history_add(gt_history *h, const gt_report_doc *d, const char *source, int64_t *id,
                         int *added) {
    *id = 0;
    *added = 0;
    int rc = exec(h, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) return db_err(h, rc, "starting to record a run");
    gt_status s = add_tx(h, d, source, id, added);
    if (s == GT_OK) {
        rc = exec(h, "COMMIT");
        if (rc != SQLITE_OK) s = db_err(h, rc, "recording the run");
    }
    if (s != GT_OK) {
        exec(h, "ROLLBACK");
        *added = 0;
    }
    return s;
}

#define BIND_TEXT(st, i, s) sqlite3_bind_text((st), (i), (s), -1, SQLITE_TRANSIENT)

static gt_status add_tx(gt_history *h, const gt_report_doc *d, const char *source, int64_t *id,
                        int *added) {
    json_t *doc = gt_report_doc_json(d), *run = json_object_get(doc, "run");
    json_t *env = json_object_get(doc, "env"), *sw = json_object_get(env, "software");
    const char *run_id = gt_report_doc_run_id(d);
    if (!run_id[0])
        return GT_ERR(GT_ERR_INVALID,
                      "report '%s' has no run.id: the history keys runs by it (gauntlet writes "
                      "one into every report)",
                      gt_report_doc_path(d));
    sqlite3_stmt *st = NULL, *ins_res = NULL, *ins_met = NULL;
    env_ins ei = {0};
    gt_status s = GT_OK;
    char **ids = NULL;
    char *text = NULL;
    size_t n = gt_report_doc_result_count(d);
    int rc = sqlite3_prepare_v2(h->db, "SELECT id FROM runs WHERE run_id = ?1", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        BIND_TEXT(st, 1, run_id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *id = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
            return GT_OK; /* recorded before */
        }
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_OK) return db_err(h, rc, "looking the run up");

    int counts[4] = {0};
    for (size_t i = 0; i < n; i++) {
        gt_result_status rs = gt_report_doc_result(d, i)->status;
        if ((int)rs >= 0 && (int)rs < 4) counts[rs]++;
    }
    gt_history_class cls;
    gt_history_class_of(d, &cls);
    json_t *gpus = json_object_get(env, "gpus");
    char gpu[160] = "";
    if (json_array_size(gpus) > 0)
        snprintf(gpu, sizeof gpu, "%zu x %s", json_array_size(gpus),
                 jstr(json_array_get(gpus, 0), "name"));
    text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
    ids = identities(d, n);
    if (!text || !ids) {
        s = GT_ERR(GT_ERR_OOM, "no memory to record the run");
        goto out;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    json_t *su = json_object_get(run, "start_unix");
    rc = sqlite3_prepare_v2(
        h->db,
        "INSERT INTO runs (run_id, start, start_unix, end_time, added_unix, git_revision, host, "
        "host_kind, topology, backends, gpu, driver, cuda, nccl, n_results, n_pass, n_fail, "
        "n_skip, n_error, source, report) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
        "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
        -1, &st, NULL);
    if (rc != SQLITE_OK) goto db;
    BIND_TEXT(st, 1, run_id);
    BIND_TEXT(st, 2, jstr(run, "start"));
    if (json_is_number(su)) sqlite3_bind_double(st, 3, json_number_value(su));
    BIND_TEXT(st, 4, jstr(run, "end"));
    sqlite3_bind_double(st, 5, now.tv_sec + now.tv_nsec * 1e-9);
    BIND_TEXT(st, 6, gt_report_doc_git_revision(d));
    BIND_TEXT(st, 7, jstr(env, "host"));
    BIND_TEXT(st, 8, cls.host_kind);
    BIND_TEXT(st, 9, cls.topology);
    BIND_TEXT(st, 10, cls.backends);
    BIND_TEXT(st, 11, gpu);
    BIND_TEXT(st, 12, jstr(sw, "cuda_driver"));
    BIND_TEXT(st, 13, jstr(sw, "cuda_runtime"));
    BIND_TEXT(st, 14, jstr(sw, "nccl"));
    sqlite3_bind_int64(st, 15, (sqlite3_int64)n);
    for (int k = 0; k < 4; k++)
        sqlite3_bind_int(st, 16 + k, counts[k]);
    BIND_TEXT(st, 20, source ? source : gt_report_doc_path(d));
    sqlite3_bind_text(st, 21, text, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) goto db;
    *id = sqlite3_last_insert_rowid(h->db);
    sqlite3_finalize(st);
    st = NULL;

    /* the fingerprint, flattened; the git revision beside the env */
    rc = sqlite3_prepare_v2(h->db, "INSERT INTO env (run, key, value) VALUES (?1, ?2, ?3)", -1,
                            &ei.st, NULL);
    if (rc != SQLITE_OK) goto db;
    sqlite3_bind_int64(ei.st, 1, *id);
    char key[512] = "env";
    if (env_row(&ei, "git_revision", gt_report_doc_git_revision(d)) ||
        flatten(env, key, sizeof key, strlen(key), env_row, &ei)) {
        rc = ei.rc;
        goto db;
    }

    rc = sqlite3_prepare_v2(h->db,
                            "INSERT INTO results (run, idx, suite, case_name, topology, backend, "
                            "status, identity) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                            -1, &ins_res, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(h->db,
                                "INSERT INTO metrics (result, run, case_name, name, unit, "
                                "higher_better, value, n, samples) VALUES (?1, ?2, ?3, ?4, ?5, "
                                "?6, ?7, ?8, ?9)",
                                -1, &ins_met, NULL);
    if (rc != SQLITE_OK) goto db;
    sqlite3_bind_int64(ins_res, 1, *id);
    sqlite3_bind_int64(ins_met, 2, *id);
    for (size_t i = 0; i < n; i++) {
        if (i == n / 2) test_pause();
        const gt_report_result *r = gt_report_doc_result(d, i);
        sqlite3_bind_int64(ins_res, 2, (sqlite3_int64)i);
        BIND_TEXT(ins_res, 3, r->suite);
        BIND_TEXT(ins_res, 4, r->case_name);
        BIND_TEXT(ins_res, 5, r->topology);
        BIND_TEXT(ins_res, 6, r->backend);
        BIND_TEXT(ins_res, 7, gt_result_status_name(r->status));
        sqlite3_bind_text(ins_res, 8, ids[i], -1, SQLITE_STATIC);
        rc = sqlite3_step(ins_res);
        sqlite3_reset(ins_res);
        if (rc != SQLITE_DONE) goto db;
        sqlite3_int64 rid = sqlite3_last_insert_rowid(h->db);
        sqlite3_bind_int64(ins_met, 1, rid);
        sqlite3_bind_text(ins_met, 3, r->case_name, -1, SQLITE_STATIC);
        for (size_t m = 0; m < r->n_metrics; m++) {
            const gt_report_metric *mt = &r->metrics[m];
            sqlite3_bind_text(ins_met, 4, mt->name, -1, SQLITE_STATIC);
            sqlite3_bind_text(ins_met, 5, mt->unit, -1, SQLITE_STATIC);
            sqlite3_bind_int(ins_met, 6, mt->higher_better);
            if (isfinite(mt->value))
                sqlite3_bind_double(ins_met, 7, mt->value);
            else
                sqlite3_bind_null(ins_met, 7);
            sqlite3_bind_int64(ins_met, 8, (sqlite3_int64)mt->n_samples);
            if (mt->n_samples)
                sqlite3_bind_blob(ins_met, 9, mt->samples,
                                  (int)(mt->n_samples * sizeof *mt->samples), SQLITE_STATIC);
            else
                sqlite3_bind_null(ins_met, 9);
            rc = sqlite3_step(ins_met);
            sqlite3_reset(ins_met);
            if (rc != SQLITE_DONE) goto db;
        }
    }
    if (n < 2) test_pause();
    *added = 1;
    rc = SQLITE_OK;
db:
    if (rc != SQLITE_OK && rc != SQLITE_DONE) s = db_err(h, rc, "recording the run");
out:
    sqlite3_finalize(st);
    sqlite3_finalize(ei.st);
    sqlite3_finalize(ins_res);
    sqlite3_finalize(ins_met);
    if (ids)
        for (size_t i = 0; i < n; i++)
            free(ids[i]);
    free(ids);
    free(text);
    return s;
}

gt_status gt_history_add_file(gt_history *h, const char *path, int64_t *id, int *added) {
    gt_report_doc *d = NULL;
    GT_TRY(gt_report_read(path, NULL, &d));
    gt_status s = gt_history_add(h, d, path, id, added);
    gt_report_doc_free(d);
    return s;
}

/* ---- listing ---------------------------------------------------------------------- */

gt_status gt_history_filter_check(const gt_history_filter *f) {
    if (!f || !f->since) return GT_OK;
    /* YYYY-MM-DD, optionally followed by a time: compared as text with the
     * runs' ISO start times */
    const char *s = f->since;
    int ok = strlen(s) >= 10;
    for (int i = 0; ok && i < 10; i++)
        ok = (i == 4 || i == 7) ? s[i] == '-' : (s[i] >= '0' && s[i] <= '9');
    if (ok && s[10] && s[10] != 'T' && s[10] != ' ') ok = 0;
    if (!ok)
        return GT_ERR(GT_ERR_INVALID,
                      "--since '%s' is not a date: write YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ "
                      "(UTC, as the reports' run.start)",
                      s);
    return GT_OK;
}

/* "WHERE ..." of a filter over runs r (and results res when with_results),
 * with the parameters' texts in order. */
static void filter_sql(const gt_history_filter *f, int with_results, char *sql, size_t cap,
                       const char **params, int *np) {
    *np = 0;
    sql[0] = '\0';
    if (!f) return;
    if (f->since) {
        strncat(sql, " AND r.start >= ?", cap - strlen(sql) - 1);
        params[(*np)++] = f->since;
    }
    if (f->host) {
        strncat(sql, " AND r.host = ?", cap - strlen(sql) - 1);
        params[(*np)++] = f->host;
    }
    if (f->backend) {
        strncat(sql,
                with_results ? " AND res.backend = ?"
                             : " AND EXISTS (SELECT 1 FROM results b WHERE b.run = r.id AND "
                               "b.backend = ?)",
                cap - strlen(sql) - 1);
        params[(*np)++] = f->backend;
    }
}

static const char *col(sqlite3_stmt *st, int i) {
    const unsigned char *s = sqlite3_column_text(st, i);
    return s && s[0] ? (const char *)s : "-";
}

/* A version as a listing shows it: the text before " (" (where the library
 * was found, why it is absent), "-" for absent. */
static const char *short_col(sqlite3_stmt *st, int i, char *buf, size_t len) {
    const char *s = col(st, i);
    const char *p = strstr(s, " (");
    snprintf(buf, len, "%.*s", p ? (int)(p - s) : (int)strlen(s), s);
    if (strcmp(buf, "absent") == 0 || strcmp(buf, "none") == 0) snprintf(buf, len, "-");
    return buf;
}

gt_status gt_history_print_runs(gt_history *h, const gt_history_filter *f, size_t limit, FILE *out,
                                size_t *n) {
    if (n) *n = 0;
    GT_TRY(gt_history_filter_check(f));
    char where[512], *sql = NULL;
    const char *params[4];
    int np = 0;
    filter_sql(f, 0, where, sizeof where, params, &np);
    sql = xprintf("SELECT * FROM (SELECT id, start, git_revision, host, gpu, driver, cuda, nccl, "
                  "n_pass, n_fail, n_skip, n_error FROM runs r WHERE 1%s ORDER BY id DESC%s) "
                  "ORDER BY id",
                  where, limit ? " LIMIT ?" : "");
    if (!sql) return GT_ERR(GT_ERR_OOM, "no memory");
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK) return db_err(h, rc, "listing the runs");
    for (int i = 0; i < np; i++)
        BIND_TEXT(st, i + 1, params[i]);
    if (limit) sqlite3_bind_int64(st, np + 1, (sqlite3_int64)limit);
    size_t count = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (count++ == 0)
            fprintf(out, "%5s  %-20s  %-12s  %-16s  %-18s  %-10s  %-8s  %-8s  %s\n", "id",
                    "start (UTC)", "git", "host", "GPU", "driver", "CUDA", "NCCL",
                    "pass/fail/skip/error");
        char git[13], drv[64], cuda[64], nccl[64];
        snprintf(git, sizeof git, "%s", col(st, 2));
        fprintf(out, "%5lld  %-20s  %-12s  %-16s  %-18s  %-10s  %-8s  %-8s  %d/%d/%d/%d\n",
                (long long)sqlite3_column_int64(st, 0), col(st, 1), git, col(st, 3), col(st, 4),
                short_col(st, 5, drv, sizeof drv), short_col(st, 6, cuda, sizeof cuda),
                short_col(st, 7, nccl, sizeof nccl), sqlite3_column_int(st, 8),
                sqlite3_column_int(st, 9), sqlite3_column_int(st, 10), sqlite3_column_int(st, 11));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return db_err(h, rc, "listing the runs");
    if (n) *n = count;
    return GT_OK;
}

/* ---- series ---------------------------------------------------------------------- */

static void point_free(gt_history_point *p) {
    free(p->start);
    free(p->samples);
}

void gt_history_series_free(gt_history_series *s, size_t n) {
    if (!s) return;
    for (size_t i = 0; i < n; i++) {
        free(s[i].suite), free(s[i].case_name), free(s[i].topology), free(s[i].backend);
        free(s[i].params), free(s[i].metric), free(s[i].unit), free(s[i].host_kind);
        for (size_t k = 0; k < s[i].n; k++)
            point_free(&s[i].pts[k]);
        free(s[i].pts);
        for (size_t k = 0; k < s[i].ncp; k++)
            free(s[i].cps[k].changed);
        free(s[i].cps);
    }
    free(s);
}

/* The identity's params part (after the fourth separator), "#k" left on. */
static char *identity_params(const char *id) {
    const char *p = id;
    for (int i = 0; i < 4 && p; i++) {
        p = strchr(p, '\x1f');
        if (p) p++;
    }
    return xstrdup(p && p[0] ? p : "{}");
}

/* Names of what exists, for a message: up to 12 distinct values of sql's
 * first column (one text parameter, may be NULL). */
static char *names_of(gt_history *h, const char *sql, const char *param) {
    sqlite3_stmt *st = NULL;
    char *out = xstrdup("");
    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) return out;
    if (param) BIND_TEXT(st, 1, param);
    int k = 0;
    while (out && sqlite3_step(st) == SQLITE_ROW) {
        char *t =
            k < 12 ? xprintf("%s%s%s", out, k ? ", " : "", col(st, 0)) : xprintf("%s, ...", out);
        free(out);
        out = t;
        if (k++ >= 12) break;
    }
    sqlite3_finalize(st);
    return out ? out : xstrdup("");
}

/* "field: old -> new" for every env field that differs between runs a and b. */
static gt_status env_diff(gt_history *h, int64_t a, int64_t b, char **out) {
    *out = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h->db,
                                "SELECT coalesce(x.key, y.key), x.value, y.value FROM "
                                "(SELECT key, value FROM env WHERE run = ?1) x FULL OUTER JOIN "
                                "(SELECT key, value FROM env WHERE run = ?2) y ON x.key = y.key "
                                "WHERE x.value IS NOT y.value ORDER BY 1",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) {
        /* FULL OUTER JOIN needs SQLite 3.39; older: the two LEFT JOINs */
        rc = sqlite3_prepare_v2(
            h->db,
            "SELECT x.key, x.value, y.value FROM env x LEFT JOIN env y ON y.run = ?2 AND "
            "y.key = x.key WHERE x.run = ?1 AND x.value IS NOT y.value UNION ALL "
            "SELECT y.key, NULL, y.value FROM env y WHERE y.run = ?2 AND NOT EXISTS (SELECT 1 "
            "FROM env x WHERE x.run = ?1 AND x.key = y.key) ORDER BY 1",
            -1, &st, NULL);
    }
    if (rc != SQLITE_OK) return db_err(h, rc, "comparing two runs' fingerprints");
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    char *s = xstrdup("");
    while (s && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *x = sqlite3_column_text(st, 1), *y = sqlite3_column_text(st, 2);
        char *t = xprintf("%s%s%s: %s -> %s", s, s[0] ? "; " : "", col(st, 0),
                          x ? (const char *)x : "(none)", y ? (const char *)y : "(none)");
        free(s);
        s = t;
    }
    sqlite3_finalize(st);
    if (!s) return GT_ERR(GT_ERR_OOM, "no memory");
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        free(s);
        return db_err(h, rc, "comparing two runs' fingerprints");
    }
    *out = s;
    return GT_OK;
}

static gt_status push_point(gt_history_series *s, size_t *cap, sqlite3_stmt *st) {
    if (s->n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        gt_history_point *p = realloc(s->pts, *cap * sizeof *p);
        if (!p) return GT_ERR(GT_ERR_OOM, "no memory for the series");
        s->pts = p;
    }
    gt_history_point *p = &s->pts[s->n];
    memset(p, 0, sizeof *p);
    p->run = sqlite3_column_int64(st, 0);
    p->start = xstrdup((const char *)sqlite3_column_text(st, 1));
    int bytes = sqlite3_column_bytes(st, 10);
    const void *blob = sqlite3_column_blob(st, 10);
    size_t k = blob ? (size_t)bytes / sizeof(double) : 0;
    double value = sqlite3_column_type(st, 9) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 9);
    p->samples = malloc((k ? k : 1) * sizeof *p->samples);
    if (!p->start || !p->samples) {
        point_free(p);
        return GT_ERR(GT_ERR_OOM, "no memory for the series");
    }
    if (k) memcpy(p->samples, blob, k * sizeof(double));
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (isfinite(p->samples[i])) p->samples[m++] = p->samples[i];
    if (m == 0) {
        if (!isfinite(value)) { /* nothing measured in this run: no point */
            point_free(p);
            return GT_OK;
        }
        p->samples[m++] = value;
    }
    p->n_samples = m;
    p->level = gt_median(p->samples, m);
    p->lo = p->hi = p->samples[0];
    for (size_t i = 1; i < m; i++) {
        p->lo = fmin(p->lo, p->samples[i]);
        p->hi = fmax(p->hi, p->samples[i]);
    }
    s->n++;
    return GT_OK;
}

gt_status gt_history_series_get(gt_history *h, const gt_history_filter *f, const char *case_name,
                                const char *metric, const gt_compare_options *opt,
                                gt_history_series **out, size_t *nout) {
    *out = NULL;
    *nout = 0;
    GT_TRY(gt_history_filter_check(f));
    char suite[128] = "";
    const char *cname = case_name;
    if (case_name) {
        /* SUITE/CASE when the part before the first '/' is a suite of the history */
        const char *slash = strchr(case_name, '/');
        if (slash && (size_t)(slash - case_name) < sizeof suite) {
            char cand[128];
            snprintf(cand, sizeof cand, "%.*s", (int)(slash - case_name), case_name);
            long long hits = 0;
            char *q = xprintf("SELECT count(*) FROM (SELECT 1 FROM results WHERE suite = '%s' "
                              "LIMIT 1)",
                              cand);
            if (q && !strchr(cand, '\'') && query_int(h, q, &hits) == SQLITE_OK && hits > 0) {
                snprintf(suite, sizeof suite, "%s", cand);
                cname = slash + 1;
            }
            free(q);
        }
    }
    char where[512];
    const char *params[4];
    int np = 0;
    filter_sql(f, 1, where, sizeof where, params, &np);
    char *sql =
        xprintf("SELECT m.run, r.start, res.suite, res.case_name, res.topology, res.backend, "
                "res.identity, m.unit, m.higher_better, m.value, m.samples, m.name, r.host_kind "
                "FROM metrics m JOIN results res ON res.id = m.result JOIN runs r ON r.id = m.run "
                "WHERE 1%s%s%s%s ORDER BY res.identity, m.name, r.host_kind, m.run",
                cname ? " AND m.case_name = ?" : "", metric ? " AND m.name = ?" : "",
                suite[0] ? " AND res.suite = ?" : "", where);
    if (!sql) return GT_ERR(GT_ERR_OOM, "no memory");
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK) return db_err(h, rc, "reading the series");
    int b = 1;
    if (cname) BIND_TEXT(st, b++, cname);
    if (metric) BIND_TEXT(st, b++, metric);
    if (suite[0]) BIND_TEXT(st, b++, suite);
    for (int i = 0; i < np; i++)
        BIND_TEXT(st, b++, params[i]);

    gt_history_series *ser = NULL;
    size_t ns = 0, cap = 0, pcap = 0;
    gt_status s = GT_OK;
    char *last_id = NULL, *last_metric = NULL;
    /* one series per result identity, metric and machine class (the runs'
     * host kind: CPU, GPUs, threads per rank): a 1-thread run and a 2-thread
     * one are no more one series than compare judges them one against the
     * other; group[i]: series i's identity and metric, for the order below */
    size_t *group = NULL, ngroup = 0;
    while (s == GT_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *idt = (const char *)sqlite3_column_text(st, 6);
        const char *mname = (const char *)sqlite3_column_text(st, 11);
        const char *kind = (const char *)sqlite3_column_text(st, 12);
        if (!idt) idt = "";
        if (!mname) mname = "";
        if (!kind) kind = "";
        int same_key = last_id && strcmp(idt, last_id) == 0 && strcmp(mname, last_metric) == 0;
        if (!same_key || strcmp(kind, ser[ns - 1].host_kind) != 0) {
            if (ns == cap) {
                cap = cap ? 2 * cap : 8;
                gt_history_series *g = realloc(ser, cap * sizeof *g);
                if (!g) {
                    s = GT_ERR(GT_ERR_OOM, "no memory for the series");
                    break;
                }
                ser = g;
                size_t *gr = realloc(group, cap * sizeof *gr);
                if (!gr) {
                    s = GT_ERR(GT_ERR_OOM, "no memory for the series");
                    break;
                }
                group = gr;
            }
            if (!same_key) ngroup++;
            group[ns] = ngroup;
            gt_history_series *x = &ser[ns++];
            memset(x, 0, sizeof *x);
            x->suite = xstrdup((const char *)sqlite3_column_text(st, 2));
            x->case_name = xstrdup((const char *)sqlite3_column_text(st, 3));
            x->topology = xstrdup((const char *)sqlite3_column_text(st, 4));
            x->backend = xstrdup((const char *)sqlite3_column_text(st, 5));
            x->params = identity_params(idt);
            x->metric = xstrdup(mname);
            x->unit = xstrdup((const char *)sqlite3_column_text(st, 7));
            x->higher_better = sqlite3_column_int(st, 8);
            x->host_kind = xstrdup(kind);
            pcap = 0;
            free(last_id);
            free(last_metric);
            last_id = xstrdup(idt);
            last_metric = xstrdup(mname);
            if (!x->suite || !x->case_name || !x->topology || !x->backend || !x->params ||
                !x->metric || !x->unit || !x->host_kind || !last_id || !last_metric) {
                s = GT_ERR(GT_ERR_OOM, "no memory for the series");
                break;
            }
        }
        s = push_point(&ser[ns - 1], &pcap, st);
    }
    if (s == GT_OK && rc != SQLITE_DONE) s = db_err(h, rc, "reading the series");
    sqlite3_finalize(st);
    free(last_id);
    free(last_metric);
    /* series left without a single measured run are dropped */
    size_t kept = 0;
    for (size_t i = 0; i < ns; i++) {
        if (ser[i].n == 0) {
            free(ser[i].suite), free(ser[i].case_name), free(ser[i].topology);
            free(ser[i].backend), free(ser[i].params), free(ser[i].metric), free(ser[i].unit);
            free(ser[i].host_kind), free(ser[i].pts);
            continue;
        }
        group[kept] = group[i];
        ser[kept++] = ser[i];
    }
    ns = kept;
    /* the classes of one identity and metric in the order they were first run */
    for (size_t i = 1; i < ns; i++)
        for (size_t j = i; j > 0 && group[j] == group[j - 1] &&
                           ser[j].pts[0].run < ser[j - 1].pts[0].run;
             j--) {
            gt_history_series t = ser[j];
            ser[j] = ser[j - 1];
            ser[j - 1] = t;
        }
    free(group);
    if (s == GT_OK && ns == 0) {
        char *have = NULL;
        if (cname) {
            long long hits = 0;
            sqlite3_stmt *q = NULL;
            if (sqlite3_prepare_v2(h->db, "SELECT count(*) FROM results WHERE case_name = ?1", -1,
                                   &q, NULL) == SQLITE_OK) {
                BIND_TEXT(q, 1, cname);
                if (sqlite3_step(q) == SQLITE_ROW) hits = sqlite3_column_int64(q, 0);
            }
            sqlite3_finalize(q);
            if (hits == 0) {
                have = names_of(h, "SELECT DISTINCT case_name FROM results ORDER BY 1", NULL);
                s = GT_ERR(GT_ERR_INVALID, "no case '%s' in history database '%s'; its cases: %s",
                           case_name, h->path, have && have[0] ? have : "(none: no run recorded)");
            } else {
                have = names_of(
                    h, "SELECT DISTINCT name FROM metrics WHERE case_name = ?1 ORDER BY 1", cname);
                s = GT_ERR(GT_ERR_INVALID,
                           "case '%s' has no metric%s%s%s in the runs selected; its metrics: %s",
                           case_name, metric ? " '" : "", metric ? metric : "", metric ? "'" : "",
                           have && have[0] ? have : "(none)");
            }
        } else {
            s = GT_ERR(GT_ERR_INVALID, "no metric in the runs selected of history database '%s'",
                       h->path);
        }
        free(have);
    }
    for (size_t i = 0; i < ns && s == GT_OK; i++) {
        gt_history_series *x = &ser[i];
        s = gt_history_change_points(x->pts, x->n, x->higher_better, x->unit, opt, &x->cps,
                                     &x->ncp);
        for (size_t k = 0; k < x->ncp && s == GT_OK; k++) {
            size_t at = x->cps[k].at;
            s = env_diff(h, x->pts[at - 1].run, x->pts[at].run, &x->cps[k].changed);
        }
    }
    if (s != GT_OK) {
        gt_history_series_free(ser, ns);
        return s;
    }
    *out = ser;
    *nout = ns;
    return GT_OK;
}

/* 1 when another series of the same case and metric differs from s in its
 * params (params 1) or, with the same params, in its machine class (params
 * 0): what tells the two apart is shown. */
static int differs_in(const gt_history_series *ser, size_t n, size_t i, int params) {
    const gt_history_series *s = &ser[i];
    for (size_t j = 0; j < n; j++)
        if (j != i && !strcmp(ser[j].suite, s->suite) && !strcmp(ser[j].case_name, s->case_name) &&
            !strcmp(ser[j].topology, s->topology) && !strcmp(ser[j].backend, s->backend) &&
            !strcmp(ser[j].metric, s->metric) &&
            (params ? strcmp(ser[j].params, s->params) != 0
                    : !strcmp(ser[j].params, s->params) && strcmp(ser[j].host_kind, s->host_kind)))
            return 1;
    return 0;
}

int gt_history_series_class_shown(const gt_history_series *ser, size_t n, size_t i) {
    return differs_in(ser, n, i, 0);
}

void gt_history_print_series(const gt_history_series *ser, size_t n, FILE *out) {
    for (size_t i = 0; i < n; i++) {
        const gt_history_series *s = &ser[i];
        int show = strcmp(s->params, "{}") != 0 && differs_in(ser, n, i, 1);
        int cls = gt_history_series_class_shown(ser, n, i);
        fprintf(out,
                "%s%s/%s on %s rank(s), backend %s%s%s%s%s%s: %s (%s, %s is better), %zu run%s, "
                "%zu change point%s\n",
                i ? "\n" : "", s->suite, s->case_name, s->topology, s->backend,
                show ? ", params " : "", show ? s->params : "", cls ? ", machine class '" : "",
                cls ? s->host_kind : "", cls ? "'" : "", s->metric,
                s->unit[0] ? s->unit : "no unit", s->higher_better ? "higher" : "lower", s->n,
                s->n == 1 ? "" : "s", s->ncp, s->ncp == 1 ? "" : "s");
        /* under the first of the classes: why the runs are apart */
        const gt_history_series *prev = i ? &ser[i - 1] : NULL;
        if (cls && !(prev && !strcmp(prev->suite, s->suite) &&
                     !strcmp(prev->case_name, s->case_name) &&
                     !strcmp(prev->topology, s->topology) && !strcmp(prev->backend, s->backend) &&
                     !strcmp(prev->metric, s->metric) && !strcmp(prev->params, s->params)))
            fprintf(out, "  (one series per machine class: CPU and its count, GPUs, threads per "
                         "rank; runs of another class are in their own series, as compare "
                         "and the gate judge runs only within a class)\n");
        fprintf(out, "  %5s  %-20s  %12s  %12s  %12s  %6s\n", "run", "start (UTC)", "level", "min",
                "max", "n");
        size_t c = 0;
        for (size_t k = 0; k < s->n; k++) {
            const gt_history_point *p = &s->pts[k];
            int here = c < s->ncp && s->cps[c].at == k;
            fprintf(out, "%s %5lld  %-20s  %12.6g  %12.6g  %12.6g  %6zu%s\n", here ? ">" : " ",
                    (long long)p->run, p->start, p->level, p->lo, p->hi, p->n_samples,
                    here ? "  <- change point" : "");
            if (here) c++;
        }
        for (size_t k = 0; k < s->ncp; k++) {
            const gt_history_change *cp = &s->cps[k];
            fprintf(out,
                    "  change point at run %lld (%s): %s, %.6g -> %.6g %s (%+.1f%%, p %.2g; "
                    "%d run%s before, %d after)\n",
                    (long long)s->pts[cp->at].run, s->pts[cp->at].start,
                    gt_verdict_name(cp->verdict), cp->before, cp->after, s->unit, 100.0 * cp->rel,
                    cp->p, cp->runs_before, cp->runs_before == 1 ? "" : "s", cp->runs_after);
            /* the fields that identify a stack; the launch and host noise counted */
            int hidden = 0;
            char *stack = cp->changed ? gt_history_stack_changes(cp->changed, &hidden) : NULL;
            fprintf(out, "    fingerprint changed at run %lld: %s", (long long)s->pts[cp->at].run,
                    stack && stack[0] ? stack
                    : hidden          ? "no field that identifies a stack"
                                      : "nothing recorded");
            if (hidden)
                fprintf(out, " (and %d launch or host field%s not shown)", hidden,
                        hidden == 1 ? "" : "s");
            fputc('\n', out);
            free(stack);
        }
    }
}

/* ---- the gate ------------------------------------------------------------------ */

/* Writes the report text of the current row of st (column 1) as
 * DIR/runNNN.json; GT_ERR_IO naming the file when it cannot. */
static gt_status gate_write_run(sqlite3_stmt *st, const char *dir, int k) {
    char *path = xprintf("%s/run%03d.json", dir, k);
    if (!path) return GT_ERR(GT_ERR_OOM, "no memory for the history gate");
    const void *text = sqlite3_column_text(st, 1);
    size_t len = (size_t)sqlite3_column_bytes(st, 1);
    FILE *f = fopen(path, "w");
    gt_status s = GT_OK;
    if (!f) {
        s = GT_ERR(GT_ERR_IO, "cannot write a good run for compare to '%s': %s", path,
                   strerror(errno));
    } else if (fwrite(text, 1, len, f) != len || fclose(f) != 0) {
        s = GT_ERR(GT_ERR_IO, "cannot write a good run for compare to '%s': %s", path,
                   strerror(errno));
    }
    free(path);
    return s;
}

static void gate_remove_dir(const char *dir, int n) {
    for (int k = 0; k < n; k++) {
        char *path = xprintf("%s/run%03d.json", dir, k);
        if (path) unlink(path);
        free(path);
    }
    rmdir(dir);
}

/* The newest good runs of the class (at most GT_HISTORY_GATE_RUNS) written
 * into a new directory under TMPDIR, the newest first (its environment is
 * the one compared); *n how many. */
static gt_status gate_write_runs(gt_history *h, sqlite3_stmt *st, char **dir_out, int *n) {
    const char *tmpdir = getenv("TMPDIR");
    char *dir = xprintf("%s/gauntlet-history-runs-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
    *dir_out = NULL;
    *n = 0;
    if (!dir || !mkdtemp(dir)) {
        gt_status s = GT_ERR(GT_ERR_IO, "cannot make a directory for the last good runs in %s: %s",
                             tmpdir && tmpdir[0] ? tmpdir : "/tmp", strerror(errno));
        free(dir);
        return s;
    }
    gt_status s = GT_OK;
    int rc = SQLITE_ROW;
    while (s == GT_OK && rc == SQLITE_ROW) {
        s = gate_write_run(st, dir, *n);
        if (s == GT_OK) (*n)++;
        if (s == GT_OK) rc = sqlite3_step(st);
    }
    if (s == GT_OK && rc != SQLITE_DONE) s = db_err(h, rc, "reading the last good runs");
    if (s != GT_OK) {
        gate_remove_dir(dir, *n);
        free(dir);
        return s;
    }
    *dir_out = dir;
    return GT_OK;
}

/* The candidate side of the gate: a report, or a directory of reports
 * (several runs of the new stack, as compare takes them). *c: the first
 * report's class; *ids: every report's run.id as a JSON array (malloc'ed),
 * none of which may be a baseline run. Every file is read by gt_report_read:
 * one bad one refuses the gate, naming it. */
static gt_status gate_candidates(const char *path, gt_history_class *c, char **ids) {
    *ids = NULL;
    struct stat sb;
    struct dirent **ents = NULL;
    int n = 1, dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (dir && (n = scandir(path, &ents, gt_report_json_entry, alphasort)) <= 0) {
        free(ents);
        return n < 0 ? GT_ERR(GT_ERR_IO, "cannot list the NEW directory '%s': %s", path,
                              strerror(errno))
                     : GT_ERR(GT_ERR_IO, "the NEW directory '%s' holds no .json report; "
                                         "pass a report, or a directory of runs of one stack",
                              path);
    }
    json_t *arr = json_array();
    gt_status s = arr ? GT_OK : GT_ERR(GT_ERR_OOM, "no memory for the gate");
    for (int i = 0; i < n && s == GT_OK; i++) {
        char *file = dir ? xprintf("%s/%s", path, ents[i]->d_name) : xstrdup(path);
        gt_report_doc *d = NULL;
        s = gt_report_read(file, "NEW", &d);
        if (s == GT_OK && i == 0) gt_history_class_of(d, c);
        if (s == GT_OK) json_array_append_new(arr, json_string(gt_report_doc_run_id(d)));
        gt_report_doc_free(d);
        free(file);
    }
    for (int i = 0; dir && i < n; i++) free(ents[i]);
    free(ents);
    if (s == GT_OK && !(*ids = json_dumps(arr, JSON_COMPACT)))
        s = GT_ERR(GT_ERR_OOM, "no memory for the gate");
    json_decref(arr);
    return s;
}

gt_status gt_history_gate(gt_history *h, const char *new_path, const gt_compare_options *opt,
                          gt_compare **out, int64_t *base_id, int *base_runs) {
    *out = NULL;
    *base_id = 0;
    *base_runs = 0;
    gt_history_class c;
    char *run_id = NULL;
    GT_TRY(gate_candidates(new_path, &c, &run_id));
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(
        h->db,
        "SELECT id, report, run_id, start FROM runs WHERE host_kind = ?1 AND topology = ?2 AND "
        "backends = ?3 AND n_fail = 0 AND n_error = 0 AND n_pass > 0 AND run_id NOT IN "
        "(SELECT value FROM json_each(?4)) ORDER BY id DESC LIMIT ?5",
        -1, &st, NULL);
    if (rc != SQLITE_OK) {
        free(run_id);
        return db_err(h, rc, "looking for the last good run");
    }
    BIND_TEXT(st, 1, c.host_kind);
    BIND_TEXT(st, 2, c.topology);
    BIND_TEXT(st, 3, c.backends);
    BIND_TEXT(st, 4, run_id);
    sqlite3_bind_int(st, 5, GT_HISTORY_GATE_RUNS);
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            free(run_id);
            return db_err(h, rc, "looking for the last good run");
        }
        /* REPORT may be recorded already: then it can be the class's only good
         * run, which the gate passes over (it is not its own baseline) */
        long long self = 0;
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(h->db,
                               "SELECT id FROM runs WHERE host_kind = ?1 AND topology = ?2 AND "
                               "backends = ?3 AND n_fail = 0 AND n_error = 0 AND n_pass > 0 AND "
                               "run_id IN (SELECT value FROM json_each(?4))",
                               -1, &q, NULL) == SQLITE_OK) {
            BIND_TEXT(q, 1, c.host_kind);
            BIND_TEXT(q, 2, c.topology);
            BIND_TEXT(q, 3, c.backends);
            BIND_TEXT(q, 4, run_id);
            if (sqlite3_step(q) == SQLITE_ROW) self = sqlite3_column_int64(q, 0);
        }
        sqlite3_finalize(q);
        free(run_id);
        /* the other classes: this one has none but REPORT */
        char *have = NULL;
        char *sql = xprintf("SELECT DISTINCT host_kind || ' | ' || topology || ' | ' || backends "
                            "FROM runs WHERE n_fail = 0 AND n_error = 0 AND n_pass > 0 AND "
                            "host_kind || ' | ' || topology || ' | ' || backends <> ?1");
        char *mine = xprintf("%s | %s | %s", c.host_kind, c.topology, c.backends);
        if (sql && mine) have = names_of(h, sql, mine);
        free(sql);
        free(mine);
        gt_status s;
        if (self)
            s = GT_ERR(GT_ERR_INVALID,
                       "the only good run of this report's class (host kind '%s', topology "
                       "'%s', backends '%s') in history database '%s' is the report itself "
                       "(recorded as run %lld, the same run.id), and a run is not its own "
                       "baseline: record another good run of this class first (the other "
                       "classes with good runs: %s)",
                       c.host_kind, c.topology, c.backends, h->path, self,
                       have && have[0] ? have : "none");
        else
            s = GT_ERR(GT_ERR_INVALID,
                       "history database '%s' has no good run (every result passed or "
                       "skipped) of this report's class: host kind '%s', topology '%s', "
                       "backends '%s'; record a good run of it first (the other classes with "
                       "good runs: %s)",
                       h->path, c.host_kind, c.topology, c.backends,
                       have && have[0] ? have : "none");
        free(have);
        return s;
    }
    free(run_id);
    *base_id = sqlite3_column_int64(st, 0);
    char *dir = NULL;
    int n = 0;
    gt_status s = gate_write_runs(h, st, &dir, &n);
    sqlite3_finalize(st);
    if (s != GT_OK) return s;
    *base_runs = n;
    /* one good run: the report itself (one run a side), else the directory:
     * several runs' spread is measured noise */
    char *one = n == 1 ? xprintf("%s/run000.json", dir) : NULL;
    s = gt_compare_files(one ? one : dir, new_path, opt, out);
    free(one);
    gate_remove_dir(dir, n);
    free(dir);
    return s;
}

gt_status gt_history_check(gt_history *h, int64_t *runs) {
    *runs = 0;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h->db, "PRAGMA integrity_check", -1, &st, NULL);
    if (rc != SQLITE_OK) return db_err(h, rc, "checking it");
    rc = sqlite3_step(st);
    char *msg = rc == SQLITE_ROW ? xstrdup((const char *)sqlite3_column_text(st, 0)) : NULL;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
        free(msg);
        return db_err(h, rc, "checking it");
    }
    if (!msg || strcmp(msg, "ok") != 0) {
        gt_status s = GT_ERR(GT_ERR_INVALID, "history database '%s' is corrupt: %s", h->path,
                             msg ? msg : "?");
        free(msg);
        return s;
    }
    free(msg);
    long long bad = 0, n = 0;
    rc = query_int(h,
                   "SELECT count(*) FROM runs r WHERE n_results <> (SELECT count(*) FROM "
                   "results x WHERE x.run = r.id)",
                   &bad);
    if (rc == SQLITE_OK) rc = query_int(h, "SELECT count(*) FROM runs", &n);
    if (rc != SQLITE_OK) return db_err(h, rc, "checking it");
    if (bad)
        return GT_ERR(GT_ERR_INVALID,
                      "history database '%s': %lld run(s) hold fewer results "
                      "than their reports",
                      h->path, bad);
    *runs = n;
    return GT_OK;
}

gt_status gt_history_run_report(gt_history *h, int64_t run, gt_report_doc **out) {
    *out = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h->db, "SELECT report FROM runs WHERE id = ?1", -1, &st, NULL);
    if (rc != SQLITE_OK) return db_err(h, rc, "reading a run's report");
    sqlite3_bind_int64(st, 1, run);
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) return db_err(h, rc, "reading a run's report");
        return GT_ERR(GT_ERR_INVALID, "history database '%s' has no run %lld", h->path,
                      (long long)run);
    }
    const char *text = (const char *)sqlite3_column_text(st, 0);
    size_t len = (size_t)sqlite3_column_bytes(st, 0);
    char name[64];
    snprintf(name, sizeof name, "run %lld of the history", (long long)run);
    gt_status s = gt_report_read_text(name, NULL, text ? text : "", text ? len : 0, out);
    sqlite3_finalize(st);
    return s;
}
#endif
