/* gauntlet data synth | encode: token files. */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/data.h"
#include "harness/cli.h"

static const char data_help[] =
    "usage: gauntlet data synth --out FILE [--tokens N] [--vocab V] [--branch K] "
    "[--seed S]\n"
    "       gauntlet data encode FILE --out FILE\n"
    "\n"
    "synth   a seeded sparse Markov chain over V symbols (default 256), K successors per\n"
    "        state (default 4), N tokens (default 1048576); its exact entropy rate goes\n"
    "        into the header: the loss a perfect model reaches\n"
    "encode  every byte of FILE becomes one token (vocabulary 256)\n"
    "Formats: docs/formats.md.\n";

static int data_usage(FILE *f) {
    fputs(data_help, f);
    return f == stdout ? GT_EXIT_OK : GT_EXIT_USAGE;
}

int gt_cmd_data(int argc, char **argv) {
    if (argc < 2) return data_usage(stderr);
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) return data_usage(stdout);
    int synth = strcmp(sub, "synth") == 0, encode = strcmp(sub, "encode") == 0;
    if (!synth && !encode) {
        static const char *const subs[] = {"synth", "encode"};
        const char *near = gt_nearest(sub, subs, 2);
        fprintf(stderr, "gauntlet data: unknown subcommand '%s'%s%s%s\n", sub,
                near ? ": did you mean " : "", near ? near : "", near ? "?" : "");
        return data_usage(stderr);
    }
    gt_args a = {.argc = argc, .argv = argv, .i = 2, .cmd = synth ? "data synth" : "data encode"};
    const char *out = NULL, *in = NULL, *v = NULL;
    int err = 0;
    gt_synth_config sc = gt_synth_defaults();
    sc.n_tokens = 1 << 20;
    while (a.i < argc && !err) {
        if (gt_flag(&a, "--help") || gt_flag(&a, "-h")) return data_usage(stdout);
        if (gt_opt(&a, "--out", &v, &err)) {
            out = v;
        } else if (synth && gt_opt(&a, "--tokens", &v, &err)) {
            err |= !gt_parse_i64(&a, "--tokens", v, 2, (int64_t)1 << 34, &sc.n_tokens);
        } else if (synth && gt_opt(&a, "--vocab", &v, &err)) {
            err |= !gt_parse_int(&a, "--vocab", v, 2, 1 << 24, &sc.vocab);
        } else if (synth && gt_opt(&a, "--branch", &v, &err)) {
            err |= !gt_parse_int(&a, "--branch", v, 1, 1 << 24, &sc.branch);
        } else if (synth && gt_opt(&a, "--seed", &v, &err)) {
            err |= !gt_parse_u64(&a, "--seed", v, &sc.seed);
        } else if (encode && !in && argv[a.i][0] != '-') {
            in = argv[a.i++];
        } else {
            char near[64];
            if (argv[a.i][0] == '-' && gt_nearest_option(argv[a.i], data_help, near, sizeof near))
                fprintf(stderr, "gauntlet %s: unknown argument '%s': did you mean %s?\n", a.cmd,
                        argv[a.i], near);
            else
                fprintf(stderr, "gauntlet %s: unknown argument '%s'\n", a.cmd, argv[a.i]);
            return data_usage(stderr);
        }
    }
    if (err) return GT_EXIT_USAGE;
    if (!out) return gt_usage_error(a.cmd, "--out FILE is required");
    if (encode && !in) return gt_usage_error(a.cmd, "which file? gauntlet data encode FILE --out FILE");
    if (synth && sc.branch > sc.vocab)
        return gt_usage_error(a.cmd, "--branch %d is larger than --vocab %d", sc.branch,
                              sc.vocab);
    gt_tokens tok;
    memset(&tok, 0, sizeof tok);
    gt_status s = synth ? gt_synth_generate(&sc, &tok) : gt_tokens_encode_bytes(in, &tok);
    if (s == GT_OK) s = gt_tokens_write(out, tok.tokens, tok.n, tok.vocab, tok.entropy);
    if (s != GT_OK) {
        gt_tokens_release(&tok);
        return gt_fail(a.cmd, s);
    }
    printf("wrote %s: %lld tokens, vocabulary %d", out, (long long)tok.n, tok.vocab);
    if (tok.entropy >= 0) printf(", entropy rate %.9f nats/token", tok.entropy);
    printf("\n");
    gt_tokens_release(&tok);
    return GT_EXIT_OK;
}
