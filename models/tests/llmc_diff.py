#!/usr/bin/env python3
"""Compares the final weights of two gpt2 runs, two llm.c model files
(version 3, fp32; gauntlet train --save-final), element by element.

usage: llmc_diff.py A.bin B.bin [--lr-sum S]

Without --lr-sum: bitwise equality. With it, the tensor-parallel bound of
docs/distributed.md ("Tensor parallelism"): tensor parallelism splits the
K-term sums of the row-parallel layers and of the head's input gradient
into tp partial sums, and each of the two orders of a K-term fp32 sum is
within gamma_K = K u (u = 2^-24) of the exact sum, relative to the sum of
the terms' magnitudes; a gradient passes 2L + 2 such sums on its way
down (two per block forward and backward, the head, the loss), so its
error is at most delta = (2L + 2) * 2 * K * u (K the longest split sum,
max(4C, Vp)) of the sum of its terms' magnitudes. AdamW's update is
lr * m / (sqrt(v) + eps), about lr * sign(g) where |g| is well above eps
and above that error: a relative change delta moves an update by at most
~2 lr delta, and over the run
  |a - b| <= 2 * delta * S     S = the sum of the steps' learning rates.
An element whose gradient is within the rounding error of zero (the sum
of its terms cancels) has no such bound: Adam's normalisation turns the
noise into an lr-sized step of either sign, in any two orders of
summation; the attention's key biases (the k third of qkvb) are all such,
their true gradient being 0 (softmax does not change when a constant is
added to every score of a row). So: no element beyond 2 * S (Adam's own
step bound), the key biases checked against that only, and at most
0.1% of the other elements beyond 2 * delta * S.
Prints each tensor's largest |a - b| and its count beyond the bound; exit 0
when all holds, 1 otherwise, 2 on unreadable input or different configs."""
import struct
import sys

U = 2.0 ** -24


def read(path):
    with open(path, "rb") as f:
        h = struct.unpack("256i", f.read(1024))
        if h[0] != 20240326 or h[1] != 3:
            raise ValueError(f"{path}: not an llm.c version 3 model file")
        data = f.read()
    return h[2:8], struct.unpack(f"{len(data) // 4}f", data)


def tensors(cfg):
    maxT, V, L, NH, C, Vp = cfg
    return [("wte", Vp * C), ("wpe", maxT * C), ("ln1w", L * C), ("ln1b", L * C),
            ("qkvw", L * 3 * C * C), ("qkvb", L * 3 * C), ("attprojw", L * C * C),
            ("attprojb", L * C), ("ln2w", L * C), ("ln2b", L * C), ("fcw", L * 4 * C * C),
            ("fcb", L * 4 * C), ("fcprojw", L * C * 4 * C), ("fcprojb", L * C),
            ("lnfw", C), ("lnfb", C)]


def key_bias(cfg, i):
    """Element i of qkvb is a key bias: the middle third of its layer's 3C."""
    C = cfg[4]
    return C <= i % (3 * C) < 2 * C


def main(argv):
    lr_sum = float(argv[argv.index("--lr-sum") + 1]) if "--lr-sum" in argv else None
    try:
        cfg, a = read(argv[1])
        cb, b = read(argv[2])
    except (OSError, ValueError, IndexError, struct.error) as e:
        print(f"llmc_diff: {e}", file=sys.stderr)
        return 2
    if cfg != cb or len(a) != len(b):
        print(f"llmc_diff: configs differ: {cfg} vs {cb}", file=sys.stderr)
        return 2
    L, C, Vp = cfg[2], cfg[4], cfg[5]
    delta = (2 * L + 2) * 2 * max(4 * C, Vp) * U
    bound = 2 * delta * lr_sum if lr_sum is not None else 0.0
    noise = 2 * lr_sum if lr_sum is not None else 0.0
    off, over, wild, total = 0, 0, 0, 0
    for name, n in tensors(cfg):
        worst = {False: 0.0, True: 0.0}
        count = 0
        for i in range(n):
            kb = name == "qkvb" and key_bias(cfg, i)
            d = abs(a[off + i] - b[off + i])
            worst[kb] = max(worst[kb], d)
            wild += d > noise
            if not kb:
                total += 1
                count += d > bound
        off += n
        over += count
        extra = f", key biases {worst[True]:.3e}" if name == "qkvb" else ""
        print(f"  {name:9s} max |a - b| {worst[False]:.3e}, {count} beyond {bound:.3e}{extra}")
    allowed = int(total * 1e-3) if lr_sum is not None else 0
    print(f"llmc_diff: delta {delta:.3e}; {over} of {total} element(s) beyond 2 delta S "
          f"(at most {allowed}), {wild} beyond 2 S = {noise:.3e}")
    return 0 if over <= allowed and wild == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
