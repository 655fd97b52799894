#!/usr/bin/env python3
"""usage: png_colors.py FILE RRGGBB [RRGGBB ...]

Counts the pixels of an 8-bit RGB or RGBA PNG (what Chromium's --screenshot
writes) within 24 of each given colour on every channel, one count per line.
Standard library only (zlib), so the HTML tests need no imaging package."""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("%s: not a PNG" % path)
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise SystemExit("%s: only 8-bit RGB/RGBA" % path)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    out = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        out.append(bytes(line))
        prev = line
    return out, w, bpp


def main():
    rows, w, bpp = pixels(sys.argv[1])
    want = [tuple(int(c[i:i + 2], 16) for i in (0, 2, 4)) for c in sys.argv[2:]]
    counts = [0] * len(want)
    for row in rows:
        for x in range(0, w * bpp, bpp):
            px = row[x:x + 3]
            for k, (r, g, b) in enumerate(want):
                if abs(px[0] - r) <= 24 and abs(px[1] - g) <= 24 and abs(px[2] - b) <= 24:
                    counts[k] += 1
    for c in counts:
        print(c)


main()
