#!/usr/bin/env python3
"""summary.md for ci/gpu_verify.sh, from the logs and JSON reports in its work folder.

  gpu_summary.py --junit FILE          one line: CTest counts from ctest's JUnit file
  gpu_summary.py --work DIR [--rc N]   the whole summary.md on stdout

Standard library only: it runs under whatever python3 the GPU machine has.
"""
import argparse
import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


def junit_counts(path):
    root = ET.parse(path).getroot()
    cases = root.iter("testcase")
    passed, failed, skipped = [], [], []
    for c in cases:
        name = c.get("name", "?")
        st = (c.get("status") or "").lower()
        if c.find("failure") is not None or c.find("error") is not None or st == "fail":
            failed.append(name)
        elif c.find("skipped") is not None or st in ("notrun", "disabled", "skipped"):
            skipped.append(name)
        else:
            passed.append(name)
    n = len(passed) + len(failed) + len(skipped)
    s = f"{n} tests: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped"
    if failed:
        s += "; FAILED: " + ", ".join(failed)
    if skipped:
        s += "; skipped: " + ", ".join(skipped)
    return s


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read(path, limit=None):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    return lines[:limit] if limit else lines


def m(res, name):
    v = res.get("metrics", {}).get(name)
    return v.get("value") if isinstance(v, dict) else None


def fmt(x, nd=1):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{x:,.{nd}f}"


def failed_cases(res, out, label):
    """The failed and errored results of res, each with its failed checks' details."""
    bad = [r for r in res if r.get("status") in ("fail", "error")]
    if not bad:
        return
    out.append("Failed / errored cases:\n")
    for r in bad[:40]:
        det = "; ".join(f"{c.get('name')}: {c.get('detail', '')}" for c in r.get("checks", [])
                        if c.get("passed") is False) or r.get("error", r.get("message", ""))
        out.append(f"- {label(r)} {r.get('status')}: {str(det)[:300]}")
    out.append("")


def section_env(work, out):
    out.append("## Machine and versions\n")
    gpu = read(os.path.join(work, "gpu.txt"))
    if gpu:
        out.append(f"GPU: {gpu[0].split('|')[0]}\n")
    env = read(os.path.join(work, "env.txt"), 45)
    if env:
        out.append("`gauntlet env`:\n\n```\n" + "\n".join(env) + "\n```\n")
    conf = read(os.path.join(work, "configure-summary.txt"))
    if conf:
        out.append("Configure summary:\n\n```\n" +
                   "\n".join(re.sub(r"^-- ?", "", l) for l in conf if l.strip("- ")) + "\n```\n")
    probe = read(os.path.join(work, "probe.txt"))
    if probe:
        keep = [l for l in probe if re.match(r"(date|PRETTY|cpu|glibc|name,|NVIDIA|Cuda comp|gcc|cmake"
                                             r"|mpirun|compute-san|--- (cuDNN|NCCL|cuBLAS|jansson|hwloc|python)"
                                             r"|#define|torch)", l.strip())]
        if keep:
            out.append("Probe (probe.txt has all of it):\n\n```\n" + "\n".join(keep[:40]) + "\n```\n")


def section_kernels(work, out):
    d = load(os.path.join(work, "kernels.json"))
    if not d:
        return
    res = [r for r in d.get("results", []) if r.get("suite") == "kernels"]
    counts = {}
    for r in res:
        counts[r.get("status")] = counts.get(r.get("status"), 0) + 1
    out.append("## Kernels suite (`gauntlet run kernels --backend cuda`)\n")
    out.append("Results: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
               (" (report cut short: see kernels.log)" if not d.get("summary") else "") + "\n")
    failed_cases(res, out, lambda r: f"`{r.get('case')}`")
    # peaks per (bound, dtype): the suite's own copy and GEMM probes
    peaks = {}
    for r in res:
        p = m(r, "peak")
        if p:
            dt = (r.get("case", "").split("/") + ["?", "?"])[1]
            bound = r.get("params", {}).get("bound", "?")
            peaks[(bound, dt)] = p
    if peaks:
        out.append("Measured peaks (the suite's probes: GEMM 8192^3 through matmul_fwd, 512 MiB device copy):\n")
        out.append("| bound | dtype | peak |\n|---|---|---|")
        for (b, dt), p in sorted(peaks.items()):
            out.append(f"| {b} | {dt} | {fmt(p / 1e3, 1) + ' TFLOP/s' if b == 'compute' else fmt(p, 0) + ' GB/s'} |")
        out.append("")
    timed = [r for r in res if m(r, "time_us") is not None]
    comp = [r for r in timed if r.get("params", {}).get("bound") == "compute"]
    mem = [r for r in timed if r.get("params", {}).get("bound") == "memory"]
    if comp:
        comp.sort(key=lambda r: -(m(r, "gflops") or 0))
        out.append("Compute-bound cases, fastest 15 (hot; cold in the report):\n")
        out.append("| case | time us | TFLOP/s | of peak | cold TFLOP/s |\n|---|---|---|---|---|")
        for r in comp[:15]:
            fp = m(r, "fraction_of_peak")
            out.append(f"| `{r['case']}` | {fmt(m(r, 'time_us'), 2)} | {fmt((m(r, 'gflops') or 0) / 1e3, 2)} | "
                       f"{fmt(fp * 100 if fp is not None else None, 1)}% | {fmt((m(r, 'gflops_cold') or 0) / 1e3, 2)} |")
        out.append("")
    lib = [r for r in timed if m(r, "fraction_of_library_best") is not None]
    if lib:
        # issue 5's goal: matmul_fwd at 90% or more of cuBLASLt's own best on the same GEMM
        lib.sort(key=lambda r: r["case"])
        out.append("matmul_fwd against cuBLASLt's own best (every algorithm the heuristic offers "
                   "for the same GEMM, timed; goal >= 90%, checked from 100 us):\n")
        out.append("| case | ours us | library best us | ours / best | check | searched |\n"
                   "|---|---|---|---|---|---|")
        for r in lib:
            ck = [c for c in r.get("checks", []) if c.get("name") == "vs_library_best"]
            verdict = ({True: "pass", False: "FAIL"}.get(ck[0].get("passed"), "not evaluated")) if ck else "-"
            f = m(r, "fraction_of_library_best")
            out.append(f"| `{r['case']}` | {fmt(m(r, 'time_us'), 2)} | "
                       f"{fmt(m(r, 'library_best_us'), 2)} | {fmt(f * 100, 1)}% | {verdict} | "
                       f"{r.get('params', {}).get('library_best', '')[:200]} |")
        out.append("")
    if mem:
        # the largest shape of each op and dtype (most bytes): what bandwidth means
        best = {}
        for r in mem:
            op, dt = (r["case"].split("/") + ["?"])[:2]
            key = (op, dt)
            if key not in best or (m(r, "time_us") or 0) > (m(best[key], "time_us") or 0):
                best[key] = r
        out.append("Memory-bound ops, largest shape of each (GB/s counts bytes read + written):\n")
        out.append("| case | time us | GB/s hot | GB/s cold | cold of copy peak |\n|---|---|---|---|---|")
        for key in sorted(best):
            r = best[key]
            fc = m(r, "fraction_of_peak_cold")
            out.append(f"| `{r['case']}` | {fmt(m(r, 'time_us'), 2)} | {fmt(m(r, 'gbps'), 0)} | "
                       f"{fmt(m(r, 'gbps_cold'), 0)} | {fmt(fc * 100 if fc is not None else None, 1)}% |")
        out.append("")
    # no figure may claim more than its peak: a fraction above 1 is a measurement error
    # (the wrong memory level, or a peak the probe under-measured)
    over = [(r["case"], k, m(r, k)) for r in timed for k in ("fraction_of_peak", "fraction_of_peak_cold")
            if (m(r, k) or 0) > 1]
    out.append(f"fraction_of_peak above 1: {len(over)} case(s)" + ("" if not over else ":\n"))
    for case, k, v in over[:20]:
        out.append(f"- `{case}` {k} {fmt(v, 2)}")
    out.append("")
    notes = sorted({r.get("params", {}).get("backend_notes", "") for r in res
                    if "attention" in r.get("case", "")} - {""})
    if notes:
        out.append("Attention paths (backend notes):\n\n```\n" + "\n".join(n[:300] for n in notes[:12]) + "\n```\n")
    own = [r["case"] for r in res if "own attention (fallback" in r.get("params", {}).get("backend_notes", "")]
    if own:
        out.append(f"Own attention (the untuned fallback: stores B*NH*T^2 fp32 scores, uncoalesced reads; "
                   f"its times are no speed claim) ran in {len(own)} case(s): " +
                   ", ".join(f"`{c}`" for c in own[:8]) + "\n")


def train_row(label, path):
    d = load(path)
    if not d or not d.get("results"):
        return None
    r = d["results"][0]
    p = r.get("params", {})
    mem = m(r, "peak_memory")
    return (f"| {label} | {r.get('status')} | {fmt(m(r, 'tokens_per_s'), 0)} | {fmt(m(r, 'ms_per_step'), 1)} | "
            f"{fmt((m(r, 'mfu') or 0) * 100, 1)}% | {fmt((m(r, 'peak_sgemm') or 0) / 1e3, 1)} | "
            f"{fmt(m(r, 'final_loss'), 4)} | {fmt(mem / 2**30 if mem else None, 2)} | {p.get('steps', '-')} |")


def section_train(work, out):
    rows = []
    for label, f in (("gauntlet, cuDNN attention (auto)", "train_bf16.json"),
                     ("gauntlet, own attention (untuned fallback: B*NH*T^2 fp32 scores, "
                      "uncoalesced; no speed claim)", "train_bf16_own.json")):
        row = train_row(label, os.path.join(work, f))
        if row:
            rows.append(row)
    tb = load(os.path.join(work, "torch_baseline.json"))
    if tb:
        rows.append(f"| PyTorch {tb.get('torch', '')} torch.compile | {tb.get('status', 'pass')} | "
                    f"{fmt(tb.get('tokens_per_s'), 0)} | {fmt(tb.get('ms_per_step'), 1)} | "
                    f"{fmt((tb.get('mfu') or 0) * 100, 1)}% | {fmt((tb.get('peak_gflops') or 0) / 1e3, 1)} | "
                    f"{fmt(tb.get('final_loss'), 4)} | {fmt(tb.get('peak_memory_gib'), 2)} | {tb.get('steps', '-')} |")
    if not rows:
        for f in ("train_bf16.log", "torch_baseline.log"):
            tail = read(os.path.join(work, f))
            if tail:
                out.append(f"## Training: no report; the end of {f}\n\n```\n" + "\n".join(tail[-15:]) + "\n```\n")
        return
    out.append("## gpt2-124m training, bf16, B=16 T=1024, one GPU\n")
    out.append("| run | status | tokens/s | ms/step | MFU | MFU ref TFLOP/s | final loss | peak GiB | steps |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    out.extend(rows)
    out.append("\nMFU = 6N + 6LCT FLOPs per token x tokens/s over the reference (the GPU's dense bf16 "
               "datasheet peak, passed as --peak-gflops; the median step, the first left out). "
               "torch_baseline.log has the PyTorch run.\n")


def section_nccl(work, out):
    d = load(os.path.join(work, "collectives.json"))
    if not d:
        log = read(os.path.join(work, "collectives.log"))
        if log:
            out.append("## NCCL collectives\n\n```\n" + "\n".join(log[-10:]) + "\n```\n")
        return
    res = [r for r in d.get("results", []) if r.get("suite") == "collectives"]
    out.append("## NCCL collectives (`gauntlet run collectives --comm nccl`)\n")
    out.append("One row per collective and topology: every dtype x op x in/out of place counted; the "
               "figures are the fp32 (else first) out-of-place row at the largest size. "
               "algbw = bytes / time.\n")
    out.append("| collective | ranks | results (pass) | wrong elements | size | time us | algbw GB/s "
               "| busbw GB/s | raw NCCL busbw | failed checks |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    groups = {}
    for r in res:
        groups.setdefault((r.get("case", "?").split("/")[0], r.get("topology")), []).append(r)
    for (coll, topo), rs in groups.items():
        npass = sum(r.get("status") == "pass" for r in rs)
        wrong = sum((c.get("value") or 0) for r in rs for c in r.get("checks", [])
                    if c.get("name") == "wrong_elements")
        failed = sorted({c.get("name", "") for r in rs for c in r.get("checks", []) if c.get("passed") is False})
        pick = [r for r in rs if r.get("params", {}).get("dtype") == "fp32"
                and not r.get("params", {}).get("in_place")] or rs
        r = pick[0]
        # time_<size>: one rank records no busbw (n/a: nothing moves between ranks)
        sizes = [int(k.split("_")[1]) for k in r.get("metrics", {}) if re.fullmatch(r"time_\d+", k)]
        if not sizes:
            continue
        sz = max(sizes)
        t = m(r, f"time_{sz}")
        algbw = sz / (t * 1e3) if t else None
        out.append(f"| {coll} | {topo} | {len(rs)} ({npass}) | {fmt(wrong, 0)} | {sz:,} B | {fmt(t, 1)} | "
                   f"{fmt(algbw, 1)} | {fmt(m(r, f'busbw_{sz}'), 1)} | {fmt(m(r, f'raw_busbw_{sz}'), 1)} | "
                   f"{', '.join(failed) or '-'} |")
    out.append("\nOn one rank busbw is n/a (not recorded: no data moves between ranks); what one GPU "
               "shows is #wrong = 0, algbw and the overhead against raw NCCL. "
               "Busbw across GPUs needs a machine with several.\n")


def section_models(work, out):
    d = load(os.path.join(work, "models.json"))
    if not d:
        return
    res = [r for r in d.get("results", []) if r.get("suite") in ("train", "scaling", "memory")]
    small = load(os.path.join(work, "models_small.json")) or {}
    res += small.get("results", [])  # mlp-small / resnet-small convergence (--full)
    out.append("## Model suites (`gauntlet run train scaling memory --backend all --topologies 1`)\n")
    counts = {}
    for r in res:
        key = (r.get("backend"), r.get("status"))
        counts[key] = counts.get(key, 0) + 1
    out.append("Results: " + ", ".join(f"{b} {st} {n}" for (b, st), n in sorted(counts.items())) +
               (" (report cut short: see models.log)" if not d.get("summary") else "") + "\n")
    failed_cases(res, out, lambda r: f"`{r.get('suite')}/{r.get('case')}` on {r.get('backend')}")
    out.append("| suite | case | backend | status | throughput | ms/step | MFU | peak memory MiB | final loss "
               "| held-out gap | time to target |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in res:
        thr, unit = None, ""
        for name, u in (("tokens_per_s", "tok/s"), ("samples_per_s", "samples/s"),
                        ("images_per_s", "images/s")):
            if m(r, name) is not None:
                thr, unit = m(r, name), u
        mfu = m(r, "mfu")
        pm = m(r, "peak_memory")
        ev, eb = m(r, "eval_loss"), r.get("params", {}).get("eval_bayes_loss")
        gap = ev - eb if ev is not None and isinstance(eb, (int, float)) else None
        ttt, stt = m(r, "time_to_target"), m(r, "steps_to_target")
        out.append(f"| {r.get('suite')} | `{r.get('case')}` | {r.get('backend')} | {r.get('status')} | "
                   f"{fmt(thr, 0) + ' ' + unit if thr else '-'} | {fmt(m(r, 'ms_per_step') or None, 2)} | "
                   f"{fmt(mfu * 100, 1) + '%' if mfu is not None else '-'} | "
                   f"{fmt(pm / 2**20 if pm is not None else None, 0)} | {fmt(m(r, 'final_loss'), 4)} | "
                   f"{fmt(gap, 4)} | "
                   f"{(fmt(ttt, 2) + ' s (step ' + fmt(stt, 0) + ')') if ttt is not None else '-'} |")
    out.append("")
    notes = sorted({r.get("params", {}).get("backend_notes", "") for r in res
                    if r.get("backend") == "cuda"} - {""})
    if notes:
        out.append("Backend notes on cuda (cuDNN conv algorithms, attention paths):\n\n```\n" +
                   "\n".join(n[:400] for n in notes[:12]) + "\n```\n")


def section_sanitize(work, out):
    logs = sorted(glob.glob(os.path.join(work, "sanitize-*.log")))
    if not logs:
        return
    out.append("## compute-sanitizer\n")
    for f in logs:
        lines = read(f) or []
        summ = next((l for l in reversed(lines) if "ERROR SUMMARY" in l), "no ERROR SUMMARY line")
        out.append(f"- {os.path.basename(f)[9:-4]}: {summ.strip()}")
    out.append("")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--junit")
    ap.add_argument("--work", action="append",
                    help="work folder (verify/ of a run); repeat to merge several calls, later wins")
    ap.add_argument("--rc", default="?")
    a = ap.parse_args()
    if a.junit:
        print(junit_counts(a.junit))
        return 0
    if not a.work:
        ap.error("--junit or --work")
    work = a.work[-1]
    if len(a.work) > 1:
        # merge: each file from the last folder that has it; stages and progress concatenated
        import shutil
        import tempfile
        work = tempfile.mkdtemp(prefix="gv-merge-")
        for name in ("stages.md", "progress.log"):
            with open(os.path.join(work, name), "w") as dst:
                if name == "stages.md":
                    dst.write("| stage | result |\n|---|---|\n")
                for w in a.work:
                    lines = read(os.path.join(w, name)) or []
                    if name == "stages.md":
                        lines = [l for l in lines if not l.startswith(("| stage |", "|---"))]
                    dst.write("\n".join(lines) + ("\n" if lines else ""))
        for w in a.work:
            for f in os.listdir(w):
                if f not in ("stages.md", "progress.log") and os.path.isfile(os.path.join(w, f)):
                    shutil.copy(os.path.join(w, f), os.path.join(work, f))
    out = ["# GPU verification summary (ci/gpu_verify.sh)\n"]
    out.append(f"Exit status of the last invocation: {a.rc} "
               "(0 all passed, 1 a check failed, 2 build/usage error, 3 no GPU)\n")
    st = read(os.path.join(work, "stages.md"))
    if st:
        out.append("## Stages\n\n" + "\n".join(st) + "\n")
    section_env(work, out)
    section_train(work, out)
    section_kernels(work, out)
    section_nccl(work, out)
    section_models(work, out)
    section_sanitize(work, out)
    prog = read(os.path.join(work, "progress.log"))
    if prog:
        out.append("## Progress log\n\n```\n" + "\n".join(prog[-40:]) + "\n```\n")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
