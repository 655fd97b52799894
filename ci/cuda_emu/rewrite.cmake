# Rewrites a CUDA source for the emulator (cmake -DIN=x.cu -DOUT=x.cc -P rewrite.cmake):
# every launch `kernel<<<cfg>>>(args)` becomes
# `kernel % ::gt_emu::launch_cfg(cfg) % ::gt_emu::args(args)` (gt_emu.h). Nothing else
# changes; #line keeps compiler messages pointing at the original file.
file(READ "${IN}" src)
string(REPLACE "<<<" " % ::gt_emu::launch_cfg(" src "${src}")
string(REPLACE ">>>" ") % ::gt_emu::args" src "${src}")
file(WRITE "${OUT}.tmp" "#include \"ci/cuda_emu/gt_emu.h\"\n#line 1 \"${IN}\"\n${src}")
file(RENAME "${OUT}.tmp" "${OUT}")
