#!/usr/bin/env python3
"""PyTorch baseline for gauntlet's gpt2-124m training step (ci/gpu_verify.sh, stage train;
--device cpu: the CPU comparison of docs/performance.md).

The same model and shapes as `gauntlet train --model gpt2-124m --precision bf16`:
12 layers, 12 heads, 768 channels, vocabulary 50257 padded to 50304, 1024 positions,
tied lm_head, GELU (tanh), pre-LayerNorm, no dropout, AdamW (betas 0.9 0.95, fused),
gradient clipping at 1.0, bf16 autocast with fp32 master weights, torch.compile,
F.scaled_dot_product_attention (flash). Random tokens: only the speed is compared.

Prints one line per step and a summary; --json writes tokens_per_s, ms_per_step
(median of the timed steps) and MFU with gauntlet's FLOP count, 6N + 6LCT per token,
and what this torch was run with (LD_LIBRARY_PATH, torch's file, its CUDA and cuDNN).
Exits 0 with status "skip" and the reason in the JSON when torch cannot be imported (any
error: a missing module, or a CUDA library that does not load) or sees no GPU; the
caller decides what that means (ci/gpu_verify.sh: NOT VERIFIED on a GPU machine). A
torch.compile that fails falls back to eager mode, with compile_error in the JSON.

--device cpu: fp32 (as gauntlet's cpu backend), torch's own threads (--threads), no
autocast; what the installed torch lacks is replaced by its plain equivalent (before
2.0: no torch.compile, attention as softmax(q k^T / sqrt(d)) v with a causal mask, AdamW
without fused). Peak memory is the process's peak resident set (ru_maxrss), which is
what /usr/bin/time reports for gauntlet.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time


def write(path, obj):
    if path:
        with open(path, "w") as f:
            json.dump(obj, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=30, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps (compilation)")
    ap.add_argument("--peak-gflops", type=float, default=989400.0,
                    help="MFU reference (default: H100/H200 SXM dense bf16)")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--threads", type=int, default=0, help="cpu: torch threads (0: its default)")
    ap.add_argument("--json")
    a = ap.parse_args()

    seen = {"ld_library_path": os.environ.get("LD_LIBRARY_PATH", ""), "python": sys.executable}
    print(f"torch baseline: python {sys.executable}, LD_LIBRARY_PATH={seen['ld_library_path'] or '(unset)'}",
          flush=True)
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - an OSError from a CUDA library that does not load too
        why = f"torch cannot be imported: {type(e).__name__}: {e}"
        print(f"torch baseline: skipped: {why}")
        write(a.json, {"status": "skip", "reason": why, **seen})
        return 0
    seen.update({"torch": torch.__version__, "torch_file": torch.__file__,
                 "torch_cuda": torch.version.cuda})
    cpu = a.device == "cpu"
    if not cpu:
        try:
            ok = torch.cuda.is_available()
            why = "torch.cuda.is_available() is False" + (" (a CPU-only torch)" if not torch.version.cuda else "")
        except Exception as e:  # noqa: BLE001
            ok, why = False, f"torch.cuda: {type(e).__name__}: {e}"
        if not ok:
            print(f"torch baseline: skipped: torch sees no CUDA GPU: {why}")
            write(a.json, {"status": "skip", "reason": f"torch sees no CUDA GPU: {why}", **seen})
            return 0
        try:
            seen["torch_cudnn"] = torch.backends.cudnn.version()
        except Exception:  # noqa: BLE001
            seen["torch_cudnn"] = None

    L, NH, C, V, VP, MAXT = 12, 12, 768, 50257, 50304, 1024
    B, T = a.batch, a.seq

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(C)
            self.qkv = nn.Linear(C, 3 * C)
            self.proj = nn.Linear(C, C)
            self.ln2 = nn.LayerNorm(C)
            self.fc = nn.Linear(C, 4 * C)
            self.fcproj = nn.Linear(4 * C, C)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (z.view(b, t, NH, c // NH).transpose(1, 2) for z in (q, k, v))
            if hasattr(F, "scaled_dot_product_attention"):
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:  # torch < 2.0
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
                y = att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
            return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VP, C)
            self.wpe = nn.Embedding(MAXT, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(C)
            self.head = nn.Linear(C, VP, bias=False)
            self.head.weight = self.wte.weight
            for n, p in self.named_parameters():
                if p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * L) if n.endswith("proj.weight") else 0.02
                    nn.init.normal_(p, 0.0, std)
                elif n.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx, targets):
            t = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(self.lnf(x))[..., :V]
            return F.cross_entropy(logits.float().reshape(-1, V), targets.reshape(-1))

    torch.manual_seed(1337)
    if cpu and a.threads > 0:
        torch.set_num_threads(a.threads)
    if not cpu:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    dev = a.device
    model = GPT().to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    fused = {} if cpu else {"fused": True}
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.0, **fused)
    compile_ok = not a.no_compile and hasattr(torch, "compile") and not cpu
    step_fn = torch.compile(model) if compile_ok else model
    gen = torch.Generator(device=dev).manual_seed(1)

    def sync():
        if not cpu:
            torch.cuda.synchronize()

    def step():
        idx = torch.randint(0, V, (B, T + 1), device=dev, generator=gen)
        if cpu:
            loss = step_fn(idx[:, :-1], idx[:, 1:])
        else:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = step_fn(idx[:, :-1], idx[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    flops_per_token = 6 * nparams + 6 * L * C * T
    devname = (f"cpu, {torch.get_num_threads()} threads" if cpu else torch.cuda.get_device_name())
    print(f"torch {torch.__version__}, {devname}, params {nparams:,}, "
          f"B={B} T={T}, compile={compile_ok}", flush=True)
    t0 = time.perf_counter()
    compile_error = None
    for i in range(a.warmup):
        try:
            loss = step()
            sync()
        except Exception as e:  # noqa: BLE001 - inductor/triton failing on this machine
            if not compile_ok:
                raise
            compile_error = f"{type(e).__name__}: {e}"
            print(f"torch baseline: torch.compile failed ({compile_error[:300]}): eager mode", flush=True)
            compile_ok = False
            step_fn = model
            opt.zero_grad(set_to_none=True)
            loss = step()
            sync()
        print(f"warm-up {i + 1}/{a.warmup}: loss {loss.item():.4f} ({time.perf_counter() - t0:.1f} s since start)",
              flush=True)
    if not cpu:
        torch.cuda.reset_peak_memory_stats()
    ms = []
    for i in range(a.steps):
        sync()
        s = time.perf_counter()
        loss = step()
        sync()
        ms.append((time.perf_counter() - s) * 1e3)
        tps = B * T / (ms[-1] * 1e-3)
        print(f"step {i + 1}/{a.steps}: loss {loss.item():.4f} {ms[-1]:.1f} ms {tps:,.0f} tok/s "
              f"MFU {tps * flops_per_token / (a.peak_gflops * 1e9) * 100:.1f}%", flush=True)
    med = statistics.median(ms)
    tps = B * T / (med * 1e-3)
    mfu = tps * flops_per_token / (a.peak_gflops * 1e9)
    if cpu:
        import resource
        peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    else:
        peak_gib = torch.cuda.max_memory_allocated() / 2**30
    res = {"status": "pass", "torch": torch.__version__, "device": devname,
           "batch": B, "seq": T, "steps": a.steps, "warmup": a.warmup, "compile": compile_ok,
           "num_params": nparams, "flops_per_token": flops_per_token, "ms_per_step": med,
           "ms_samples": ms, "tokens_per_s": tps, "mfu": mfu, "peak_gflops": a.peak_gflops,
           "final_loss": loss.item(), "peak_memory_gib": peak_gib, "compile_error": compile_error, **seen}
    print(f"torch baseline: median {med:.1f} ms/step, {tps:,.0f} tokens/s, MFU {mfu * 100:.1f}% "
          f"of {a.peak_gflops:.0f} GFLOP/s", flush=True)
    write(a.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
