/* mllog_check FILE [--eval] [--train]: checks an --mllog file against the
 * MLPerf logging format (mlcommons/logging: mllog.py writes the lines, the
 * compliance checker's common.yaml states what each key needs).
 *
 * Every line must be ":::MLLOG " and a JSON object with exactly namespace
 * (string), time_ms (number), event_type (INTERVAL_START, INTERVAL_END,
 * POINT_IN_TIME), key (string), value (any) and metadata (object with file, a
 * string, and lineno, an integer). time_ms never decreases. Then the rules:
 *   - init_start at least once, before init_stop and run_start; init_stop
 *     exactly once, before run_start; run_start exactly once; run_stop exactly
 *     once, after run_start, with metadata.status "success" or "aborted";
 *   - submission_benchmark, _org, _division (closed or open), _status,
 *     _platform exactly once each; cache_clear at least once, with a value;
 *   - block_start: after run_start, metadata samples_count >= 0 or
 *     epoch_count > 0 with first_epoch_num; block_stop: samples_count or
 *     first_epoch_num; epoch_start/stop: epoch_num; eval_start/stop and
 *     eval_accuracy: epoch_num or samples_count; starts and stops of a key
 *     alternate, every start has its stop;
 *   - --eval: at least one eval_accuracy, a number; --train: train_samples
 *     and eval_samples exactly once each, global_batch_size present.
 * Prints each violation with its line number; exit 1 on any. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errors;
static void bad(int line, const char *what, const char *key) {
    fprintf(stderr, "line %d: %s%s%s\n", line, what, key ? ": " : "", key ? key : "");
    errors++;
}

enum { MAXK = 64 };
static struct {
    char key[64];
    int count, open;
} keys[MAXK];
static int nkeys;

static int *slot(const char *key, int open) {
    for (int i = 0; i < nkeys; i++)
        if (strcmp(keys[i].key, key) == 0) return open ? &keys[i].open : &keys[i].count;
    if (nkeys == MAXK) return NULL;
    snprintf(keys[nkeys].key, sizeof keys[nkeys].key, "%s", key);
    return open ? &keys[nkeys++].open : &keys[nkeys++].count;
}
static int count_of(const char *key) {
    for (int i = 0; i < nkeys; i++)
        if (strcmp(keys[i].key, key) == 0) return keys[i].count;
    return 0;
}

static int has(json_t *md, const char *k) {
    return json_object_get(md, k) != NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: mllog_check FILE [--eval] [--train]\n");
        return 2;
    }
    int want_eval = 0, want_train = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--eval") == 0) want_eval = 1;
        if (strcmp(argv[i], "--train") == 0) want_train = 1;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    int line = 0, lines = 0, run_started = 0, init_stopped = 0, run_stopped = 0;
    double last_t = -1;
    while ((len = getline(&buf, &cap, f)) >= 0) {
        line++;
        if (len > 0 && buf[len - 1] == '\n') buf[--len] = '\0';
        if (strncmp(buf, ":::MLLOG ", 9) != 0) {
            bad(line, "not an :::MLLOG line", NULL);
            continue;
        }
        lines++;
        json_error_t je;
        json_t *o = json_loads(buf + 9, 0, &je);
        if (!json_is_object(o)) {
            bad(line, "not a JSON object", je.text);
            json_decref(o);
            continue;
        }
        static const char *const fields[] = {"namespace", "time_ms", "event_type",
                                             "key",       "value",   "metadata"};
        if (json_object_size(o) != 6) bad(line, "not exactly the six fields", NULL);
        for (int i = 0; i < 6; i++)
            if (!json_object_get(o, fields[i])) bad(line, "missing field", fields[i]);
        json_t *t = json_object_get(o, "time_ms"), *md = json_object_get(o, "metadata");
        const char *ns = json_string_value(json_object_get(o, "namespace"));
        const char *type = json_string_value(json_object_get(o, "event_type"));
        const char *key = json_string_value(json_object_get(o, "key"));
        json_t *value = json_object_get(o, "value");
        if (!ns) bad(line, "namespace is not a string", NULL);
        if (!json_is_number(t))
            bad(line, "time_ms is not a number", NULL);
        else if (json_number_value(t) < last_t)
            bad(line, "time_ms goes back", key);
        else
            last_t = json_number_value(t);
        if (!type || (strcmp(type, "INTERVAL_START") && strcmp(type, "INTERVAL_END") &&
                      strcmp(type, "POINT_IN_TIME")))
            bad(line, "bad event_type", type);
        if (!json_is_object(md) || !json_is_string(json_object_get(md, "file")) ||
            !json_is_integer(json_object_get(md, "lineno")))
            bad(line, "metadata lacks file and lineno", key);
        if (!key) {
            bad(line, "key is not a string", NULL);
            json_decref(o);
            continue;
        }
        int *c = slot(key, 0);
        if (c) (*c)++;
        /* starts and stops alternate per interval kind */
        static const char *const pairs[][2] = {{"block_start", "block_stop"},
                                               {"epoch_start", "epoch_stop"},
                                               {"eval_start", "eval_stop"}};
        for (int i = 0; i < 3; i++) {
            int *op = slot(pairs[i][0], 1);
            if (!op) continue;
            if (strcmp(key, pairs[i][0]) == 0) {
                if (*op) bad(line, "started again before its stop", key);
                *op = 1;
                if (!run_started) bad(line, "before run_start", key);
            } else if (strcmp(key, pairs[i][1]) == 0) {
                if (!*op) bad(line, "a stop without its start", key);
                *op = 0;
            }
        }
        if (!strcmp(key, "init_start")) {
            if (init_stopped || run_started)
                bad(line, "init_start after init_stop/run_start", NULL);
        } else if (!strcmp(key, "init_stop")) {
            if (count_of("init_start") == 0 || run_started)
                bad(line, "init_stop out of order", NULL);
            init_stopped = 1;
        } else if (!strcmp(key, "run_start")) {
            if (!init_stopped) bad(line, "run_start before init_stop", NULL);
            run_started = 1;
        } else if (!strcmp(key, "run_stop")) {
            const char *st = json_string_value(json_object_get(md, "status"));
            if (!run_started) bad(line, "run_stop before run_start", NULL);
            if (!st || (strcmp(st, "success") && strcmp(st, "aborted")))
                bad(line, "run_stop without metadata.status success|aborted", NULL);
            run_stopped = 1;
        } else if (!strcmp(key, "block_start")) {
            json_t *sc = json_object_get(md, "samples_count"),
                   *ec = json_object_get(md, "epoch_count");
            if (!sc && !ec) bad(line, "block_start without samples_count or epoch_count", NULL);
            if (ec && (!has(md, "first_epoch_num") || json_number_value(ec) <= 0))
                bad(line, "block_start epoch_count without first_epoch_num, or not > 0", NULL);
            if (sc && (!json_is_number(sc) || json_number_value(sc) < 0))
                bad(line, "block_start samples_count < 0", NULL);
        } else if (!strcmp(key, "block_stop")) {
            if (!has(md, "first_epoch_num") && !has(md, "samples_count"))
                bad(line, "block_stop without first_epoch_num or samples_count", NULL);
        } else if (!strcmp(key, "epoch_start") || !strcmp(key, "epoch_stop")) {
            if (!has(md, "epoch_num")) bad(line, "without epoch_num", key);
        } else if (!strcmp(key, "eval_start") || !strcmp(key, "eval_stop") ||
                   !strcmp(key, "eval_accuracy")) {
            if (!has(md, "epoch_num") && !has(md, "samples_count"))
                bad(line, "without epoch_num or samples_count", key);
            if (!strcmp(key, "eval_accuracy") && !json_is_number(value))
                bad(line, "eval_accuracy value is not a number", NULL);
        } else if (!strcmp(key, "submission_division")) {
            const char *d = json_string_value(value);
            if (!d || (strcmp(d, "closed") && strcmp(d, "open")))
                bad(line, "submission_division not closed|open", NULL);
        } else if (!strcmp(key, "cache_clear")) {
            if (!value) bad(line, "cache_clear without a value", NULL);
        }
        json_decref(o);
    }
    free(buf);
    fclose(f);
    if (lines == 0) bad(0, "no :::MLLOG line", NULL);
    static const char *const once[] = {"init_stop",
                                       "run_start",
                                       "run_stop",
                                       "submission_benchmark",
                                       "submission_org",
                                       "submission_division",
                                       "submission_status",
                                       "submission_platform",
                                       NULL};
    for (int i = 0; once[i]; i++)
        if (count_of(once[i]) != 1) bad(0, "not exactly once", once[i]);
    if (count_of("init_start") < 1) bad(0, "no init_start", NULL);
    if (count_of("cache_clear") < 1) bad(0, "no cache_clear", NULL);
    if (count_of("block_start") + count_of("epoch_start") < 1) bad(0, "no block or epoch", NULL);
    for (int i = 0; i < nkeys; i++)
        if (keys[i].open) bad(0, "started and never stopped", keys[i].key);
    if (!run_stopped) bad(0, "no run_stop", NULL);
    if (want_eval && count_of("eval_accuracy") < 1) bad(0, "no eval_accuracy", NULL);
    if (want_train) {
        if (count_of("train_samples") != 1) bad(0, "not exactly once", "train_samples");
        if (count_of("eval_samples") != 1) bad(0, "not exactly once", "eval_samples");
        if (count_of("global_batch_size") < 1) bad(0, "missing", "global_batch_size");
    }
    if (errors) {
        fprintf(stderr, "%s: %d problem(s) in %d line(s)\n", argv[1], errors, lines);
        return 1;
    }
    printf("%s: %d MLLOG lines, format and required keys ok\n", argv[1], lines);
    return 0;
}
