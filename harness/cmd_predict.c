/* gauntlet predict: data-parallel step time at rank counts that were not
 * measured, from reports that were (reports/predict.h, docs/predict.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli.h"
#include "reports/predict.h"
#include "reports/predict_layout.h"
#include "reports/read.h"

static void predict_usage(FILE *f) {
    fprintf(f,
            "usage: gauntlet predict --from REPORT.json [REPORT.json ...] [--ranks 8,64,512,4096]\n"
            "                        [options]\n"
            "\n"
            "Predicts the data-parallel step time, throughput and strong and weak scaling\n"
            "efficiency at each rank count from what the reports measured: the compute time\n"
            "of a train or scaling case (gauntlet run scaling), the collectives' latency and\n"
            "bandwidth (gauntlet run collectives), and gauntlet's own bucketed, overlapped\n"
            "all-reduce (or ZeRO-1's reduce-scatter and all-gather). Every figure carries the\n"
            "interval the measured samples allow; efficiency is a row's throughput over ranks\n"
            "x the 1-rank row's, every row with the same cores per rank; a rank count that\n"
            "was measured shows the measured step beside the predicted one.\n"
            "docs/predict.md has the model.\n"
            "\n"
            "  --from REPORT...        reports to read (the words after it that are not options)\n"
            "  --ranks LIST            rank counts to predict (default 8,64,512,4096)\n"
            "  --case NAME             the train / scaling case to scale (default gpt2-3m,\n"
            "                          else the first one the reports have)\n"
            "  --global-batch B        strong scaling's global batch (default: the case's)\n"
            "  --batch-per-rank B      weak scaling's batch per rank (default: the case's on\n"
            "                          its smallest topology)\n"
            "  --ranks-per-node K      ranks on one node (default: the most measured on one\n"
            "                          node without more ranks than cores)\n"
            "  --cores-per-rank X      host backends: cores every predicted rank has, on every\n"
            "                          row (default: the node's cores / ranks per node)\n"
            "  --bucket-mb X           all-reduce bucket size (default: the report's, else 25)\n"
            "  --backward-fraction F   the backward's share of the compute (default 0.667)\n"
            "  --zero 0|1|2|3          predict without ZeRO, with ZeRO-1, ZeRO-2 or ZeRO-3\n"
            "                          (default: the case's)\n"
            "  --intra-alpha-us A --intra-beta-gbps B\n"
            "                          a network that was not measured, inside a node:\n"
            "                          latency per step (us) and bus bandwidth (GB/s)\n"
            "  --inter-alpha-us A --inter-beta-gbps B\n"
            "                          the same between nodes\n"
            "  --alpha-us A --beta-gbps B  both levels at once (the per-level options win)\n"
            "  --check                 also predict every measured multi-rank topology from a\n"
            "                          fit that leaves it out, and print predicted vs measured\n"
            "                          (collectives measured at that rank count only: its links\n"
            "                          come from them, and the row says it is not leave-one-out)\n"
            "  --max-error PCT         with --check: exit 1 when a prediction is off by more\n"
            "  --max-error-oversubscribed PCT  the same for topologies with more ranks than\n"
            "                          cores (default: --max-error)\n"
            "  --json FILE             also write the prediction as JSON (replaced atomically)\n"
            "\n"
            "Layouts (gpt2 train results with --layout dp=D,tp=T,pp=P; docs/predict.md, \"Layouts\"):\n"
            "  --layouts               rank every layout dp x tp x pp of each --ranks (default\n"
            "                          64,512,4096) by predicted step time and propose the\n"
            "                          fastest that fits; with --check, predict each measured\n"
            "                          layout from the other layouts' results\n"
            "  --memory-per-rank SIZE  the memory a rank has (64MiB, 16GiB; implies --layouts)\n"
            "  --micro-batch B         sequences per micro-batch (default: the measured one)\n"
            "  --schedule 1f1b|gpipe   the pipeline schedule (default: the measured one)\n"
            "  --top N                 layouts printed per rank count (default 8)\n"
            "\n"
            "exit codes: 0 predicted, 1 a --check prediction outside --max-error,\n"
            "            2 usage error or reports without what the model needs (the message\n"
            "            names what is missing and the suite to run)\n");
}

/* "8,64,512": positive rank counts */
static int parse_ranks(const char *v, gt_predict_options *o) {
    o->n_ranks = 0;
    if (!v || !*v) {
        fprintf(stderr, "gauntlet predict: --ranks needs a list of rank counts, e.g. "
                        "--ranks 8,64,512\n");
        return 0;
    }
    const char *p = v;
    for (;;) {
        char *end = NULL;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || (*end != ',' && *end != '\0') || x < 1 || x > 100000000) {
            fprintf(stderr,
                    "gauntlet predict: --ranks '%s': expects a comma-separated list of rank "
                    "counts from 1 to 100000000, e.g. 8,64,512,4096\n",
                    v);
            return 0;
        }
        if (o->n_ranks >= GT_PREDICT_MAX_RANKS) {
            fprintf(stderr, "gauntlet predict: --ranks: at most %d rank counts\n",
                    GT_PREDICT_MAX_RANKS);
            return 0;
        }
        o->ranks[o->n_ranks++] = (int)x;
        if (*end == '\0') break;
        p = end + 1;
    }
    return 1;
}

/* The reports named by inputs, read into *docs (n of them, NULL where one
 * was not read); free_docs frees what was read. */
static gt_status read_docs(const char **inputs, int n, gt_report_doc ***docs) {
    *docs = calloc((size_t)n, sizeof **docs);
    if (!*docs) return GT_ERR(GT_ERR_OOM, "no memory");
    gt_status s = GT_OK;
    for (int i = 0; i < n && s == GT_OK; i++)
        s = gt_report_read(inputs[i], NULL, &(*docs)[i]);
    return s;
}

static void free_docs(gt_report_doc **docs, int n) {
    for (int i = 0; docs && i < n; i++)
        gt_report_doc_free(docs[i]);
    free(docs);
}

/* --layouts: the layout model (reports/predict_layout.h) */
static int predict_layouts(const char **inputs, int n, const gt_predict_options *o,
                           const gt_layout_options *lo) {
    int rc = GT_EXIT_OK;
    gt_report_doc **docs = NULL;
    gt_layout_prediction *p = NULL;
    gt_status s = read_docs(inputs, n, &docs);
    if (s == GT_OK) s = gt_layout_predict(docs, (size_t)n, o, lo, &p);
    if (s == GT_OK) {
        gt_layout_prediction_print(p, stdout);
        int checked;
        double worst;
        gt_layout_check_counts(p, &checked, &worst);
        if (o->max_error > 0 && (checked == 0 || worst > o->max_error)) {
            fprintf(stderr, "gauntlet predict: --max-error %.1f%%: %s\n", 100 * o->max_error,
                    checked ? "a measured layout was predicted further off"
                            : "no measured layout could be checked");
            rc = GT_EXIT_CHECK;
        }
    } else {
        gt_fail("predict", s);
        rc = GT_EXIT_USAGE;
    }
    gt_layout_prediction_free(p);
    free_docs(docs, n);
    return rc;
}

int gt_cmd_predict(int argc, char **argv) {
    gt_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "predict"};
    gt_predict_options o = gt_predict_defaults();
    const char *v = NULL, *json = NULL;
    double alpha = NAN, beta = NAN, pct = 0;
    int err = 0, n = 0, have_ranks = 0, layouts = 0;
    gt_layout_options lo = gt_layout_defaults();
    const char **inputs = calloc((size_t)(argc > 1 ? argc : 1), sizeof *inputs);
    if (!inputs) return gt_usage_error("predict", "no memory");
    while (a.i < argc && !err) {
        if (gt_flag(&a, "--help") || gt_flag(&a, "-h")) {
            predict_usage(stdout);
            free(inputs);
            return GT_EXIT_OK;
        } else if (strncmp(argv[a.i], "--from=", 7) == 0 && argv[a.i][7]) {
            inputs[n++] = argv[a.i++] + 7;
        } else if (gt_flag(&a, "--from")) {
            int before = n;
            while (a.i < argc && !(argv[a.i][0] == '-' && argv[a.i][1] == '-'))
                inputs[n++] = argv[a.i++];
            if (n == before) {
                fprintf(stderr, "gauntlet predict: --from needs at least one report\n");
                err = 1;
            }
        } else if (gt_opt(&a, "--ranks", &v, &err)) {
            err |= !parse_ranks(v, &o);
            have_ranks = 1;
        } else if (gt_opt(&a, "--case", &v, &err)) {
            o.case_name = gt_cli_case_name("predict", v);
        } else if (gt_opt(&a, "--global-batch", &v, &err)) {
            err |= !gt_parse_double(&a, "--global-batch", v, 1, 1e12, &o.global_batch);
        } else if (gt_opt(&a, "--batch-per-rank", &v, &err)) {
            err |= !gt_parse_double(&a, "--batch-per-rank", v, 1e-6, 1e12, &o.batch_per_rank);
        } else if (gt_opt(&a, "--ranks-per-node", &v, &err)) {
            err |= !gt_parse_int(&a, "--ranks-per-node", v, 1, 1000000, &o.ranks_per_node);
        } else if (gt_opt(&a, "--cores-per-rank", &v, &err)) {
            err |= !gt_parse_double(&a, "--cores-per-rank", v, 1e-3, 1e6, &o.cores_per_rank);
        } else if (gt_opt(&a, "--bucket-mb", &v, &err)) {
            err |= !gt_parse_double(&a, "--bucket-mb", v, 0.001, 65536, &o.bucket_mb);
        } else if (gt_opt(&a, "--backward-fraction", &v, &err)) {
            err |= !gt_parse_double(&a, "--backward-fraction", v, 0.01, 1, &o.backward_fraction);
        } else if (gt_opt(&a, "--zero", &v, &err)) {
            err |= !gt_parse_int(&a, "--zero", v, 0, 3, &o.zero);
        } else if (gt_opt(&a, "--intra-alpha-us", &v, &err)) {
            err |= !gt_parse_double(&a, "--intra-alpha-us", v, 0, 1e9, &o.intra_alpha_us);
        } else if (gt_opt(&a, "--intra-beta-gbps", &v, &err)) {
            err |= !gt_parse_double(&a, "--intra-beta-gbps", v, 1e-9, 1e9, &o.intra_beta_gbps);
        } else if (gt_opt(&a, "--inter-alpha-us", &v, &err)) {
            err |= !gt_parse_double(&a, "--inter-alpha-us", v, 0, 1e9, &o.inter_alpha_us);
        } else if (gt_opt(&a, "--inter-beta-gbps", &v, &err)) {
            err |= !gt_parse_double(&a, "--inter-beta-gbps", v, 1e-9, 1e9, &o.inter_beta_gbps);
        } else if (gt_opt(&a, "--alpha-us", &v, &err)) {
            err |= !gt_parse_double(&a, "--alpha-us", v, 0, 1e9, &alpha);
        } else if (gt_opt(&a, "--beta-gbps", &v, &err)) {
            err |= !gt_parse_double(&a, "--beta-gbps", v, 1e-9, 1e9, &beta);
        } else if (gt_flag(&a, "--layouts")) {
            layouts = 1;
        } else if (gt_opt(&a, "--memory-per-rank", &v, &err)) {
            lo.memory_per_rank = gt_layout_parse_size(v);
            layouts = 1;
            if (!(lo.memory_per_rank > 0)) {
                fprintf(stderr, "gauntlet predict: --memory-per-rank '%s': expects a size such "
                                "as 64MiB, 16GiB or a number of bytes\n", v ? v : "");
                err = 1;
            }
        } else if (gt_opt(&a, "--micro-batch", &v, &err)) {
            err |= !gt_parse_double(&a, "--micro-batch", v, 1, 1e9, &lo.micro_batch);
        } else if (gt_opt(&a, "--top", &v, &err)) {
            err |= !gt_parse_int(&a, "--top", v, 1, 100000, &lo.top);
        } else if (gt_opt(&a, "--schedule", &v, &err)) {
            if (v && strcmp(v, "gpipe") == 0) lo.gpipe = 1;
            else if (v && strcmp(v, "1f1b") == 0) lo.gpipe = 0;
            else {
                fprintf(stderr, "gauntlet predict: --schedule '%s': expects 1f1b or gpipe\n",
                        v ? v : "");
                err = 1;
            }
        } else if (gt_flag(&a, "--check")) {
            o.check = 1;
        } else if (gt_opt(&a, "--max-error", &v, &err)) {
            err |= !gt_parse_double(&a, "--max-error", v, 0.001, 1e6, &pct);
            o.max_error = pct / 100;
        } else if (gt_opt(&a, "--max-error-oversubscribed", &v, &err)) {
            err |= !gt_parse_double(&a, "--max-error-oversubscribed", v, 0.001, 1e6, &pct);
            o.max_error_over = pct / 100;
        } else if (gt_opt(&a, "--json", &v, &err)) {
            json = v;
        } else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0') {
            gt_unknown_option("predict", argv[a.i], predict_usage);
            err = 1;
        } else {
            inputs[n++] = argv[a.i++];
        }
    }
    if (err) {
        free(inputs);
        return GT_EXIT_USAGE;
    }
    if (n == 0) {
        free(inputs);
        return gt_usage_error("predict", "no report given: --from REPORT.json (reports of "
                                         "`gauntlet run scaling collectives --topologies 1,2`)");
    }
    if (isnan(alpha) != isnan(beta)) {
        free(inputs);
        return gt_usage_error("predict", "--alpha-us and --beta-gbps go together (a network "
                                         "that was not measured needs both)");
    }
    if (!isnan(alpha)) {
        if (isnan(o.intra_alpha_us) && isnan(o.intra_beta_gbps)) {
            o.intra_alpha_us = alpha;
            o.intra_beta_gbps = beta;
        }
        if (isnan(o.inter_alpha_us) && isnan(o.inter_beta_gbps)) {
            o.inter_alpha_us = alpha;
            o.inter_beta_gbps = beta;
        }
    }
    for (int l = 0; l < 2; l++) {
        double pa = l ? o.inter_alpha_us : o.intra_alpha_us;
        double pb = l ? o.inter_beta_gbps : o.intra_beta_gbps;
        if (isnan(pa) != isnan(pb)) {
            free(inputs);
            return gt_usage_error("predict",
                                  "--%s-alpha-us goes with --%s-beta-gbps (a network "
                                  "that was not measured needs both its latency and "
                                  "its bandwidth)",
                                  l ? "inter" : "intra", l ? "inter" : "intra");
        }
    }
    if ((o.max_error > 0 || o.max_error_over > 0) && !o.check) {
        free(inputs);
        return gt_usage_error("predict", "--max-error bounds the --check predictions: add "
                                         "--check");
    }
    if (layouts && json) {
        free(inputs);
        return gt_usage_error("predict", "--json is not written for --layouts yet (the "
                                         "ranking is printed)");
    }
    if (layouts) {
        if (have_ranks) {
            lo.n_ranks = o.n_ranks;
            memcpy(lo.ranks, o.ranks, sizeof o.ranks);
        }
        lo.ranks_per_node = o.ranks_per_node;
        lo.cores_per_rank = o.cores_per_rank;
        lo.global_batch = o.global_batch;
        lo.check = o.check;
        int rc = predict_layouts(inputs, n, &o, &lo);
        free(inputs);
        return rc;
    }
    if (!have_ranks) {
        static const int dflt[] = {8, 64, 512, 4096};
        o.n_ranks = 4;
        memcpy(o.ranks, dflt, sizeof dflt);
    }

    int rc = GT_EXIT_OK;
    gt_report_doc **docs = NULL;
    gt_prediction *p = NULL;
    gt_status s = read_docs(inputs, n, &docs);
    if (s == GT_OK) s = gt_predict_build(docs, (size_t)n, &o, &p);
    if (s == GT_OK) {
        gt_prediction_print(p, stdout);
        if (json) {
            s = gt_prediction_write_json(p, json);
            if (s == GT_OK) printf("prediction: %s\n", json);
        }
    }
    if (s != GT_OK) {
        rc = gt_fail("predict", s);
        if (rc != GT_EXIT_USAGE) rc = GT_EXIT_USAGE;
    } else if (o.check) {
        int checked, failed;
        gt_prediction_check_counts(p, &checked, &failed);
        if (failed) rc = GT_EXIT_CHECK;
        /* a bound asked for and nothing to hold it to is no pass */
        if (checked == 0 && (o.max_error > 0 || o.max_error_over > 0)) {
            fprintf(stderr, "gauntlet predict: --max-error: no measured multi-rank topology "
                            "could be checked (see the assumptions above)\n");
            rc = GT_EXIT_CHECK;
        }
    }
    gt_prediction_free(p);
    free_docs(docs, n);
    free(inputs);
    return rc;
}
