# The include half of the layer rule (CMakeLists.txt, "the layers, checked"),
# run as the test build.layers.host:
#   cmake -DSOURCE_DIR=<repo> -DLAYERS=<layer,...> -DGT_LAYER_BELOW_<layer>=<a,b,...> ...
#         -P ci/layers.cmake
# For every layer given, each #include "dir/..." in its C, C++ and CUDA files
# must name the layer itself or one below it (GT_LAYER_BELOW_<layer>); an
# include of a file without a directory ("gt_config.h", a neighbour) is free.
# A layer's tests/ are left out: tests link every layer (`gt`). Fails with one
# line per offending include.
if(NOT SOURCE_DIR)
    message(FATAL_ERROR "layers.cmake: -DSOURCE_DIR=<repository root> is required")
endif()

if(NOT LAYERS)
    message(FATAL_ERROR "layers.cmake: -DLAYERS=<layer,layer,...> is required")
endif()
string(REPLACE "," ";" layers "${LAYERS}")
set(known ${layers})

set(bad 0)
set(files_seen 0)
foreach(layer ${layers})
    string(REPLACE "," ";" allowed "${GT_LAYER_BELOW_${layer}}")
    list(APPEND allowed ${layer})
    file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
         ${SOURCE_DIR}/${layer}/*.c ${SOURCE_DIR}/${layer}/*.h ${SOURCE_DIR}/${layer}/*.cc
         ${SOURCE_DIR}/${layer}/*.cu ${SOURCE_DIR}/${layer}/*.cuh)
    list(FILTER files EXCLUDE REGEX "(^|/)tests/")
    foreach(f ${files})
        math(EXPR files_seen "${files_seen} + 1")
        file(STRINGS ${SOURCE_DIR}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"/]+/")
        foreach(line ${lines})
            string(REGEX MATCH "\"([^\"/]+)/[^\"]*\"" inc "${line}")
            set(dir ${CMAKE_MATCH_1})
            list(FIND known ${dir} is_layer)
            if(is_layer LESS 0)
                continue() # not a layer (a library's own subdirectory)
            endif()
            list(FIND allowed ${dir} ok)
            if(ok LESS 0)
                list(JOIN allowed ", " may)
                message("${f}: ${inc}: ${layer}/ may include only ${may}")
                math(EXPR bad "${bad} + 1")
            endif()
        endforeach()
    endforeach()
endforeach()

if(files_seen EQUAL 0)
    message(FATAL_ERROR "layers.cmake: no source files under ${SOURCE_DIR} (${layers})")
endif()
if(bad GREATER 0)
    message(FATAL_ERROR "layers.cmake: ${bad} include(s) up the layers (of ${files_seen} files)")
endif()
list(JOIN layers ", " names)
message("layers.cmake: ${files_seen} files of ${names}: every include points down")
