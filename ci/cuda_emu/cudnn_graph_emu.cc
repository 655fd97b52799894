/* The CUDA emulator's stand-in for cuDNN's graph (backend) API, with an
 * interpreter for the operation graphs attention_cudnn.cu builds (SDPA);
 * cudnn_emu.cc says what the stand-in is.
 *
 * Descriptors are created, typed attributes are checked and stored
 * (attribute type and owning descriptor type for the attributes
 * attention_cudnn.cu uses, referenced descriptors live and finalized),
 * finalize checks what cuDNN requires of tensors, pointwise,
 * matmul, reduction and reshape operations (required attributes, shape
 * agreement, broadcasting) and of the operation graph (handle, ops, unique
 * tensor ids), and compiles the graph for an interpreter that executes it
 * as built: ops in data-dependence order, each tensor held as fp32 values
 * by coordinate and rounded to its declared type when written (virtual
 * ones too), tensors in memory read and written through their own dims and
 * strides, a reshape a view (X laid out by its strides, read back by Y's).
 * Matmul (batched, broadcast), the pointwise modes pw_interpreted lists,
 * reductions ADD/MUL/MAX/MIN, reshape; anything else is NOT_SUPPORTED. The
 * heuristics offer two engines, 0 and 1, both deterministic and without
 * numerical notes unless GT_EMU_CUDNN_NONDET says otherwise (below). A plan asks for a workspace:
 * the fp32 bytes of its largest virtual tensor (the real engines ask for one too). Execute checks
 * the variant pack against the graph (every non-virtual uid, no other, no
 * NULL, device memory over each tensor's extent, the declared byte
 * alignment; a workspace pointer that is device memory over the size the
 * plan asked for and overlaps no tensor) and writes over the whole
 * workspace, as the engines' kernels would. Nothing here says what the real
 * cuDNN's engines accept.
 *
 * Single-threaded, synchronous (every stream is the emulator's null stream). */
#include "ci/cuda_emu/cudnn_emu.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <memory>
#include <set>
#include <vector>

using namespace gt_cudnn_emu;

/* ---- the graph (backend) API: checked descriptors, an interpreter ------------------------- */

namespace {

struct battr {
    cudnnBackendAttributeType_t type;
    int64_t count;
    std::vector<unsigned char> bytes;
};

struct program; /* a finalized operation graph, compiled for the interpreter */

struct bdesc {
    cudnnBackendDescriptorType_t type;
    bool finalized;
    std::map<int, battr> attrs;
    /* operation graph, heuristics, engine config, engine, plan: the
     * compiled graph and (config, engine, plan) the engine's index */
    std::shared_ptr<program> prog;
    int64_t engine = -1;
    int64_t workspace = 0; /* plan: the bytes it asked for */
    mutable unsigned long long calls = 0; /* plan: executions so far */
};

size_t attr_elem_size(cudnnBackendAttributeType_t t) {
    switch (t) {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
        return sizeof(void *);
    case CUDNN_TYPE_BOOLEAN:
        return sizeof(bool);
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
        return 8;
    case CUDNN_TYPE_FLOAT:
    case CUDNN_TYPE_INT32:
        return 4;
    case CUDNN_TYPE_CHAR:
        return 1;
    case CUDNN_TYPE_FRACTION:
        return sizeof(cudnnFraction_t);
    default:
        return sizeof(int); /* the enums */
    }
}

/* What cuDNN documents for the attributes the backend sets: the descriptor
 * they belong to, their type and, for descriptor-valued ones, the type of
 * descriptor they take (-1: any). */
struct attr_spec {
    cudnnBackendAttributeName_t name;
    cudnnBackendDescriptorType_t owner;
    cudnnBackendAttributeType_t type;
    int takes;
};
const attr_spec specs[] = {
    {CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, -1},
    {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, -1},
    {CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, -1},
    {CUDNN_ATTR_TENSOR_STRIDES, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, -1},
    {CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, -1},
    {CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_BOOLEAN, -1},
    {CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_BOOLEAN, -1},
    {CUDNN_ATTR_POINTWISE_MODE, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_TYPE_POINTWISE_MODE, -1},
    {CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, -1},
    {CUDNN_ATTR_POINTWISE_AXIS, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_TYPE_INT64, -1},
    {CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_POINTWISE_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_BACKEND_MATMUL_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, -1},
    {CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_MATMUL_DESCRIPTOR},
    {CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_BACKEND_REDUCTION_DESCRIPTOR,
     CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, -1},
    {CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, -1},
    {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_REDUCTION_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, CUDNN_TYPE_HANDLE,
     -1},
    {CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, -1},
    {CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_TYPE_HEUR_MODE, -1},
    {CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR},
    {CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_TYPE_HANDLE,
     -1},
    {CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR},
    {CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_TYPE_INT64,
     -1},
    {CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
     CUDNN_TYPE_VOID_PTR, -1},
    {CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_TYPE_VOID_PTR,
     -1},
};

const attr_spec *spec_of(int name) {
    for (const attr_spec &s : specs)
        if ((int)s.name == name) return &s;
    return NULL;
}

bdesc *bd(cudnnBackendDescriptor_t d) {
    return reg_has(K_BACKEND, d) ? (bdesc *)d : NULL;
}

const battr *attr(const bdesc *d, int name) {
    auto it = d->attrs.find(name);
    return it == d->attrs.end() ? NULL : &it->second;
}

bdesc *attr_desc(const bdesc *d, int name, int i = 0) {
    const battr *a = attr(d, name);
    if (!a || a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR || i >= a->count) return NULL;
    void *p;
    memcpy(&p, a->bytes.data() + (size_t)i * sizeof p, sizeof p);
    return bd(p);
}

bool attr_i64(const bdesc *d, int name, std::vector<int64_t> &out) {
    const battr *a = attr(d, name);
    if (!a || a->type != CUDNN_TYPE_INT64) return false;
    out.resize((size_t)a->count);
    if (a->count) memcpy(out.data(), a->bytes.data(), (size_t)a->count * 8);
    return true;
}

int attr_enum(const bdesc *d, int name, int dflt) {
    const battr *a = attr(d, name);
    if (!a || a->count < 1) return dflt;
    int v;
    memcpy(&v, a->bytes.data(), sizeof v);
    return v;
}

std::vector<int64_t> dims_of(const bdesc *t) {
    std::vector<int64_t> d;
    if (t) attr_i64(t, CUDNN_ATTR_TENSOR_DIMENSIONS, d);
    return d;
}

/* The tensor `name` of operation d, required. */
cudnnStatus_t need_tensor(const char *fn, const bdesc *d, int name, const char *what, bdesc **out) {
    *out = attr_desc(d, name);
    if (!*out)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "required attribute %s (%d) is not set", what,
                    name);
    return CUDNN_STATUS_SUCCESS;
}

/* Broadcasting as cuDNN's pointwise operations allow: each dim of `in`
 * equal to out's or 1, same rank. */
bool broadcasts(const std::vector<int64_t> &in, const std::vector<int64_t> &out) {
    if (in.size() != out.size()) return false;
    for (size_t i = 0; i < in.size(); i++)
        if (in[i] != out[i] && in[i] != 1) return false;
    return true;
}

const char *dstr(const std::vector<int64_t> &d, char *buf, size_t n) {
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < d.size() && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "x" : "", (long long)d[i]);
    return buf;
}

cudnnStatus_t finalize_tensor(const char *fn, bdesc *d) {
    static const int req[] = {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_DIMENSIONS,
                              CUDNN_ATTR_TENSOR_STRIDES, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                              CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT};
    for (int r : req)
        if (!attr(d, r) || attr(d, r)->count < 1)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor: required attribute %d is not set", r);
    std::vector<int64_t> dim, st, al;
    attr_i64(d, CUDNN_ATTR_TENSOR_DIMENSIONS, dim);
    attr_i64(d, CUDNN_ATTR_TENSOR_STRIDES, st);
    attr_i64(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, al);
    if (dim.size() != st.size() || dim.empty() || dim.size() > CUDNN_DIM_MAX)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor: %zu dims, %zu strides", dim.size(),
                    st.size());
    for (size_t i = 0; i < dim.size(); i++)
        if (dim[i] <= 0 || st[i] <= 0)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor: dim %zu is %lld, stride %lld", i,
                        (long long)dim[i], (long long)st[i]);
    if (al.size() != 1 || al[0] <= 0 || (al[0] & (al[0] - 1)))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor: byte alignment must be a power of 2");
    bool virt = false, byval = false;
    const battr *v = attr(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL),
                *b = attr(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
    if (v && v->count >= 1) memcpy(&virt, v->bytes.data(), sizeof virt);
    if (b && b->count >= 1) memcpy(&byval, b->bytes.data(), sizeof byval);
    if (virt && byval)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor: virtual and by-value at once");
    return CUDNN_STATUS_SUCCESS;
}

bool pw_binary(int mode) {
    switch (mode) {
    case CUDNN_POINTWISE_ADD:
    case CUDNN_POINTWISE_ADD_SQUARE:
    case CUDNN_POINTWISE_DIV:
    case CUDNN_POINTWISE_MAX:
    case CUDNN_POINTWISE_MIN:
    case CUDNN_POINTWISE_MOD:
    case CUDNN_POINTWISE_MUL:
    case CUDNN_POINTWISE_POW:
    case CUDNN_POINTWISE_SUB:
    case CUDNN_POINTWISE_ATAN2:
    case CUDNN_POINTWISE_BINARY_SELECT:
        return true;
    default:
        return mode >= CUDNN_POINTWISE_CMP_EQ && mode <= CUDNN_POINTWISE_LOGICAL_OR;
    }
}

cudnnStatus_t finalize_op(const char *fn, bdesc *d) {
    char b1[96], b2[96], b3[96];
    cudnnStatus_t s;
    if (d->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
        bdesc *pw = attr_desc(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), *x, *y;
        if (!pw)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "pointwise operation without PW_DESCRIPTOR");
        if ((s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, "XDESC", &x)) ||
            (s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, "YDESC", &y)))
            return s;
        int mode = attr_enum(pw, CUDNN_ATTR_POINTWISE_MODE, -1);
        std::vector<int64_t> dy = dims_of(y);
        if (!broadcasts(dims_of(x), dy))
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "pointwise mode %d: X %s does not broadcast to Y %s", mode,
                        dstr(dims_of(x), b1, sizeof b1), dstr(dy, b2, sizeof b2));
        bdesc *bt = attr_desc(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
        if (pw_binary(mode) && !bt)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "pointwise mode %d needs BDESC", mode);
        if (bt && !broadcasts(dims_of(bt), dy))
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "pointwise mode %d: B %s does not broadcast to Y %s", mode,
                        dstr(dims_of(bt), b1, sizeof b1), dstr(dy, b2, sizeof b2));
        bdesc *t = attr_desc(d, CUDNN_ATTR_OPERATION_POINTWISE_TDESC);
        if (mode == CUDNN_POINTWISE_BINARY_SELECT && !t)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "BINARY_SELECT needs TDESC (the mask)");
        if (t && !broadcasts(dims_of(t), dy))
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "pointwise mode %d: T does not broadcast to Y", mode);
        if (mode == CUDNN_POINTWISE_GEN_INDEX) {
            std::vector<int64_t> ax;
            if (!attr_i64(pw, CUDNN_ATTR_POINTWISE_AXIS, ax) || ax.size() != 1 || ax[0] < 0 ||
                ax[0] >= (int64_t)dy.size())
                return fail(CUDNN_STATUS_BAD_PARAM, fn, "GEN_INDEX needs an axis within Y's rank");
        }
        return CUDNN_STATUS_SUCCESS;
    }
    if (d->type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) {
        bdesc *a, *b, *c;
        if ((s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_MATMUL_ADESC, "ADESC", &a)) ||
            (s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_MATMUL_BDESC, "BDESC", &b)) ||
            (s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_MATMUL_CDESC, "CDESC", &c)))
            return s;
        if (!attr_desc(d, CUDNN_ATTR_OPERATION_MATMUL_DESC))
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "matmul operation without MATMUL_DESC");
        std::vector<int64_t> da = dims_of(a), db = dims_of(b), dc = dims_of(c);
        size_t n = dc.size();
        bool ok = n >= 3 && da.size() == n && db.size() == n && da[n - 1] == db[n - 2] &&
                  dc[n - 2] == da[n - 2] && dc[n - 1] == db[n - 1];
        for (size_t i = 0; ok && i + 2 < n; i++)
            ok = (da[i] == dc[i] || da[i] == 1) && (db[i] == dc[i] || db[i] == 1);
        if (!ok)
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "matmul: A %s times B %s cannot give C %s", dstr(da, b1, sizeof b1),
                        dstr(db, b2, sizeof b2), dstr(dc, b3, sizeof b3));
        return CUDNN_STATUS_SUCCESS;
    }
    if (d->type == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR) {
        bdesc *x, *y;
        if ((s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, "XDESC", &x)) ||
            (s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, "YDESC", &y)))
            return s;
        if (!attr_desc(d, CUDNN_ATTR_OPERATION_REDUCTION_DESC))
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "reduction operation without its DESC");
        if (!broadcasts(dims_of(y), dims_of(x)))
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "reduction: Y %s is not X %s with some dims reduced to 1",
                        dstr(dims_of(y), b1, sizeof b1), dstr(dims_of(x), b2, sizeof b2));
        return CUDNN_STATUS_SUCCESS;
    }
    if (d->type == CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR) {
        bdesc *x, *y;
        if ((s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, "XDESC", &x)) ||
            (s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, "YDESC", &y)))
            return s;
        long long nx = 1, ny = 1;
        for (int64_t v : dims_of(x))
            nx *= v;
        for (int64_t v : dims_of(y))
            ny *= v;
        if (nx != ny)
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "reshape: X has %lld elements, Y %lld", nx, ny);
        return CUDNN_STATUS_SUCCESS;
    }
    return CUDNN_STATUS_SUCCESS;
}

bool is_operation(cudnnBackendDescriptorType_t t) {
    switch (t) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_SIGNAL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR:
        return true;
    default:
        return false;
    }
}

/* ---- the interpreter: a finalized operation graph compiled into a program ---------------- */

enum { P_POINTWISE, P_MATMUL, P_REDUCTION, P_RESHAPE };

struct ptensor {
    int64_t uid;
    cudnnDataType_t dt;
    std::vector<int64_t> dim, stride;
    int64_t align;
    bool virt, byval;
    size_t n; /* elements */
};

struct pop {
    int kind;
    int mode;       /* pointwise mode or reduction operator */
    int64_t axis;   /* GEN_INDEX */
    int x, b, t, y; /* tensor indices, -1: none (matmul: x = A, b = B, y = C) */
};

struct program {
    std::vector<ptensor> t;
    std::vector<pop> ops;      /* in an order where every input is written before it is read */
    std::vector<int> last_use; /* per tensor: the last op reading it, -1 none */
};

bool attr_bool(const bdesc *d, int name) {
    const battr *a = attr(d, name);
    bool v = false;
    if (a && a->count >= 1 && a->type == CUDNN_TYPE_BOOLEAN) memcpy(&v, a->bytes.data(), sizeof v);
    return v;
}

bool pw_unary(int mode) {
    switch (mode) {
    case CUDNN_POINTWISE_EXP:
    case CUDNN_POINTWISE_LOG:
    case CUDNN_POINTWISE_NEG:
    case CUDNN_POINTWISE_ABS:
    case CUDNN_POINTWISE_SQRT:
    case CUDNN_POINTWISE_RSQRT:
    case CUDNN_POINTWISE_RECIPROCAL:
    case CUDNN_POINTWISE_IDENTITY:
    case CUDNN_POINTWISE_TANH_FWD:
    case CUDNN_POINTWISE_LOGICAL_NOT:
        return true;
    default:
        return false;
    }
}

/* the pointwise modes the interpreter computes */
bool pw_interpreted(int mode) {
    switch (mode) {
    case CUDNN_POINTWISE_ADD:
    case CUDNN_POINTWISE_SUB:
    case CUDNN_POINTWISE_MUL:
    case CUDNN_POINTWISE_DIV:
    case CUDNN_POINTWISE_MAX:
    case CUDNN_POINTWISE_MIN:
    case CUDNN_POINTWISE_CMP_EQ:
    case CUDNN_POINTWISE_CMP_NEQ:
    case CUDNN_POINTWISE_CMP_GT:
    case CUDNN_POINTWISE_CMP_GE:
    case CUDNN_POINTWISE_CMP_LT:
    case CUDNN_POINTWISE_CMP_LE:
    case CUDNN_POINTWISE_LOGICAL_AND:
    case CUDNN_POINTWISE_LOGICAL_OR:
    case CUDNN_POINTWISE_BINARY_SELECT:
    case CUDNN_POINTWISE_GEN_INDEX:
        return true;
    default:
        return pw_unary(mode);
    }
}

bool dt_interpreted(cudnnDataType_t dt) {
    return dt == CUDNN_DATA_FLOAT || dt == CUDNN_DATA_HALF || dt == CUDNN_DATA_BFLOAT16 ||
           dt == CUDNN_DATA_INT32 || dt == CUDNN_DATA_BOOLEAN;
}

/* Compiles the finalized graph d (its ops checked by finalize_op) into
 * d->prog: tensors by uid, ops in data-dependence order. */
cudnnStatus_t compile(const char *fn, bdesc *d) {
    auto P = std::make_shared<program>();
    std::map<const bdesc *, int> idx;
    cudnnStatus_t bad = CUDNN_STATUS_SUCCESS;
    auto tix = [&](const bdesc *t) -> int {
        if (!t) return -1;
        auto it = idx.find(t);
        if (it != idx.end()) return it->second;
        ptensor pt;
        std::vector<int64_t> v;
        attr_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, v);
        pt.uid = v[0];
        attr_i64(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, v);
        pt.align = v[0];
        pt.dt = (cudnnDataType_t)attr_enum(t, CUDNN_ATTR_TENSOR_DATA_TYPE, -1);
        attr_i64(t, CUDNN_ATTR_TENSOR_DIMENSIONS, pt.dim);
        attr_i64(t, CUDNN_ATTR_TENSOR_STRIDES, pt.stride);
        pt.virt = attr_bool(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
        pt.byval = attr_bool(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
        pt.n = 1;
        for (int64_t e : pt.dim)
            pt.n *= (size_t)e;
        if (!dt_interpreted(pt.dt) && !bad)
            bad = fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                       "tensor uid %lld: data type %s (%d) is not interpreted", (long long)pt.uid,
                       dt_name(pt.dt), (int)pt.dt);
        if (!pt.virt && pt.dt == CUDNN_DATA_BOOLEAN && !bad)
            bad = fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                       "tensor uid %lld: a BOOLEAN tensor in memory is not interpreted (virtual "
                       "only)",
                       (long long)pt.uid);
        if (pt.byval && (pt.n != 1 || pt.dt != CUDNN_DATA_FLOAT) && !bad)
            bad = fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                       "tensor uid %lld: by-value tensors are interpreted as one FLOAT only",
                       (long long)pt.uid);
        P->t.push_back(pt);
        return idx[t] = (int)P->t.size() - 1;
    };
    const battr *ops = attr(d, CUDNN_ATTR_OPERATIONGRAPH_OPS);
    std::vector<pop> raw;
    for (int64_t i = 0; i < ops->count; i++) {
        const bdesc *op = attr_desc(d, CUDNN_ATTR_OPERATIONGRAPH_OPS, (int)i);
        pop o = {0, -1, -1, -1, -1, -1, -1};
        if (op->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
            const bdesc *pw = attr_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
            o.kind = P_POINTWISE;
            o.mode = attr_enum(pw, CUDNN_ATTR_POINTWISE_MODE, -1);
            int prec = attr_enum(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, -1);
            o.x = tix(attr_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC));
            o.b = tix(attr_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC));
            o.t = tix(attr_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC));
            o.y = tix(attr_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC));
            std::vector<int64_t> ax;
            if (attr_i64(pw, CUDNN_ATTR_POINTWISE_AXIS, ax) && !ax.empty()) o.axis = ax[0];
            if (!pw_interpreted(o.mode))
                return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                            "op %lld: pointwise mode %d is not interpreted", (long long)i, o.mode);
            if (prec != CUDNN_DATA_FLOAT && prec != CUDNN_DATA_INT32 && prec != CUDNN_DATA_BOOLEAN)
                return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                            "op %lld: pointwise math precision %s (%d) is not interpreted",
                            (long long)i, dt_name((cudnnDataType_t)prec), prec);
            bool unary = pw_unary(o.mode) || o.mode == CUDNN_POINTWISE_GEN_INDEX;
            if (unary && o.b >= 0)
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "op %lld: pointwise mode %d takes one input, BDESC is set",
                            (long long)i, o.mode);
            if (o.t >= 0 && o.mode != CUDNN_POINTWISE_BINARY_SELECT)
                return fail(CUDNN_STATUS_BAD_PARAM, fn, "op %lld: pointwise mode %d takes no TDESC",
                            (long long)i, o.mode);
            if (o.mode == CUDNN_POINTWISE_GEN_INDEX && o.axis < 0)
                return fail(CUDNN_STATUS_BAD_PARAM, fn, "op %lld: GEN_INDEX without an axis",
                            (long long)i);
            if (o.mode != CUDNN_POINTWISE_GEN_INDEX && o.axis >= 0)
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "op %lld: AXIS is set on pointwise mode %d (GEN_INDEX only)",
                            (long long)i, o.mode);
            if (o.mode == CUDNN_POINTWISE_BINARY_SELECT && P->t[o.t].dt != CUDNN_DATA_BOOLEAN)
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "op %lld: BINARY_SELECT's TDESC (uid %lld) is %s, not BOOLEAN",
                            (long long)i, (long long)P->t[o.t].uid, dt_name(P->t[o.t].dt));
        } else if (op->type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) {
            const bdesc *mm = attr_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC);
            o.kind = P_MATMUL;
            o.x = tix(attr_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC));
            o.b = tix(attr_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC));
            o.y = tix(attr_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC));
            int comp = attr_enum(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, -1);
            if (comp != CUDNN_DATA_FLOAT)
                return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                            "op %lld: matmul compute type %s (%d) is not interpreted (FLOAT only)",
                            (long long)i, dt_name((cudnnDataType_t)comp), comp);
        } else if (op->type == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR) {
            const bdesc *rd = attr_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC);
            o.kind = P_REDUCTION;
            o.mode = attr_enum(rd, CUDNN_ATTR_REDUCTION_OPERATOR, -1);
            o.x = tix(attr_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC));
            o.y = tix(attr_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC));
            int comp = attr_enum(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, -1);
            if (o.mode != CUDNN_REDUCE_TENSOR_ADD && o.mode != CUDNN_REDUCE_TENSOR_MAX &&
                o.mode != CUDNN_REDUCE_TENSOR_MIN && o.mode != CUDNN_REDUCE_TENSOR_MUL)
                return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                            "op %lld: reduction operator %d is not interpreted", (long long)i,
                            o.mode);
            if (comp != CUDNN_DATA_FLOAT)
                return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                            "op %lld: reduction compute type %s (%d) is not interpreted",
                            (long long)i, dt_name((cudnnDataType_t)comp), comp);
        } else if (op->type == CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR) {
            o.kind = P_RESHAPE;
            o.x = tix(attr_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC));
            o.y = tix(attr_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC));
        } else {
            return fail(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, fn,
                        "op %lld: operation descriptor type %d is not interpreted", (long long)i,
                        (int)op->type);
        }
        if (bad) return bad;
        raw.push_back(o);
    }
    /* every tensor written at most once, never a by-value one; every virtual
     * tensor read is written */
    size_t nt = P->t.size(), no = raw.size();
    std::vector<int> producer(nt, -1);
    for (size_t i = 0; i < no; i++) {
        int y = raw[i].y;
        if (producer[y] >= 0)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "tensor uid %lld is the output of ops %d and %zu", (long long)P->t[y].uid,
                        producer[y], i);
        if (P->t[y].byval)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "op %zu writes the by-value tensor uid %lld", i,
                        (long long)P->t[y].uid);
        producer[y] = (int)i;
    }
    for (size_t i = 0; i < no; i++)
        for (int in : {raw[i].x, raw[i].b, raw[i].t})
            if (in >= 0 && P->t[in].virt && producer[in] < 0)
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "op %zu reads the virtual tensor uid %lld, which no op writes", i,
                            (long long)P->t[in].uid);
    /* data-dependence order, the graph's own order among ready ops */
    std::vector<bool> done(no, false), ready_t(nt, false);
    for (size_t j = 0; j < nt; j++)
        ready_t[j] = producer[j] < 0;
    for (size_t step = 0; step < no; step++) {
        size_t pick = no;
        for (size_t i = 0; i < no && pick == no; i++) {
            if (done[i]) continue;
            bool ok = true;
            for (int in : {raw[i].x, raw[i].b, raw[i].t})
                if (in >= 0 && !ready_t[in]) ok = false;
            if (ok) pick = i;
        }
        if (pick == no) return fail(CUDNN_STATUS_BAD_PARAM, fn, "the operation graph has a cycle");
        done[pick] = true;
        ready_t[raw[pick].y] = true;
        P->ops.push_back(raw[pick]);
    }
    P->last_use.assign(nt, -1);
    for (size_t i = 0; i < no; i++)
        for (int in : {P->ops[i].x, P->ops[i].b, P->ops[i].t})
            if (in >= 0) P->last_use[in] = (int)i;
    d->prog = P;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- execution ---------------------------------------------------------------------------- */

/* GT_EMU_CUDNN_NONDET (the engines, below) */
enum nondet_mode { ND_NONE, ND_NOTE, ND_ENGINE0 };
nondet_mode nondet(void) {
    const char *v = getenv("GT_EMU_CUDNN_NONDET");
    if (!v || !*v) return ND_NONE;
    if (strcmp(v, "note") == 0) return ND_NOTE;
    if (strcmp(v, "engine0") == 0) return ND_ENGINE0;
    fprintf(stderr, "cuDNN stand-in: GT_EMU_CUDNN_NONDET=%s: use note or engine0\n", v);
    abort();
}

/* v rounded to what a tensor of type dt holds */
float round_to(cudnnDataType_t dt, float v) {
    switch (dt) {
    case CUDNN_DATA_HALF:
        return __half2float(__float2half_rn(v));
    case CUDNN_DATA_BFLOAT16:
        return __bfloat162float(__float2bfloat16_rn(v));
    case CUDNN_DATA_INT32:
        if (v != v) return 0.0f;
        return v >= 2147483647.0f    ? 2147483647.0f
               : v <= -2147483648.0f ? -2147483648.0f
                                     : truncf(v);
    case CUDNN_DATA_BOOLEAN:
        return v != 0.0f ? 1.0f : 0.0f;
    default:
        return v;
    }
}

size_t mem_size(cudnnDataType_t dt) {
    return dt == CUDNN_DATA_INT32 ? 4 : dt_size(dt);
}

float mem_load(const void *p, int64_t i, cudnnDataType_t dt) {
    if (dt == CUDNN_DATA_INT32) return (float)((const int32_t *)p)[i];
    return load1(p, (size_t)i, dt);
}

void mem_store(void *p, int64_t i, cudnnDataType_t dt, float v) {
    if (dt == CUDNN_DATA_INT32)
        ((int32_t *)p)[i] = (int32_t)v;
    else
        store1(p, (size_t)i, dt, v);
}

/* Calls f(logical index, memory offset) over the tensor's elements in
 * row-major order (the offset from the tensor's strides). */
template <typename F> void each_elem(const ptensor &t, F f) {
    size_t n = t.dim.size();
    std::vector<int64_t> c(n, 0);
    int64_t off = 0;
    int64_t inner = t.dim[n - 1], is = t.stride[n - 1];
    for (size_t i = 0; i < t.n; i += (size_t)inner) {
        for (int64_t e = 0; e < inner; e++)
            f(i + (size_t)e, off + e * is);
        for (int k = (int)n - 2; k >= 0; k--) {
            off += t.stride[k];
            if (++c[k] < t.dim[k]) break;
            off -= t.stride[k] * t.dim[k];
            c[k] = 0;
        }
    }
}

/* the elements' span in memory, in elements */
int64_t span_of(const ptensor &t) {
    int64_t s = 1;
    for (size_t i = 0; i < t.dim.size(); i++)
        s += (t.dim[i] - 1) * t.stride[i];
    return s;
}

/* row-major strides of `in` seen with `out`'s dims: 0 where in broadcasts */
std::vector<int64_t> bstrides(const std::vector<int64_t> &in, const std::vector<int64_t> &out) {
    std::vector<int64_t> s(in.size());
    int64_t acc = 1;
    for (int i = (int)in.size() - 1; i >= 0; i--) {
        s[i] = (in[i] == 1 && out[i] != 1) ? 0 : acc;
        acc *= in[i];
    }
    return s;
}

float pw_eval(int mode, float x, float b, float t) {
    switch (mode) {
    case CUDNN_POINTWISE_ADD:
        return x + b;
    case CUDNN_POINTWISE_SUB:
        return x - b;
    case CUDNN_POINTWISE_MUL:
        return x * b;
    case CUDNN_POINTWISE_DIV:
        return x / b;
    case CUDNN_POINTWISE_MAX:
        return x > b ? x : b;
    case CUDNN_POINTWISE_MIN:
        return x < b ? x : b;
    case CUDNN_POINTWISE_CMP_EQ:
        return x == b;
    case CUDNN_POINTWISE_CMP_NEQ:
        return x != b;
    case CUDNN_POINTWISE_CMP_GT:
        return x > b;
    case CUDNN_POINTWISE_CMP_GE:
        return x >= b;
    case CUDNN_POINTWISE_CMP_LT:
        return x < b;
    case CUDNN_POINTWISE_CMP_LE:
        return x <= b;
    case CUDNN_POINTWISE_LOGICAL_AND:
        return x != 0 && b != 0;
    case CUDNN_POINTWISE_LOGICAL_OR:
        return x != 0 || b != 0;
    case CUDNN_POINTWISE_LOGICAL_NOT:
        return x == 0;
    case CUDNN_POINTWISE_BINARY_SELECT: /* y = t ? x : b */
        return t != 0 ? x : b;
    case CUDNN_POINTWISE_EXP:
        return expf(x);
    case CUDNN_POINTWISE_LOG:
        return logf(x);
    case CUDNN_POINTWISE_NEG:
        return -x;
    case CUDNN_POINTWISE_ABS:
        return fabsf(x);
    case CUDNN_POINTWISE_SQRT:
        return sqrtf(x);
    case CUDNN_POINTWISE_RSQRT:
        return 1.0f / sqrtf(x);
    case CUDNN_POINTWISE_RECIPROCAL:
        return 1.0f / x;
    case CUDNN_POINTWISE_TANH_FWD:
        return tanhf(x);
    default: /* IDENTITY */
        return x;
    }
}

struct runner {
    const program &P;
    int64_t engine;
    std::vector<const void *> ptr;       /* per tensor: memory (non-virtual) */
    std::vector<std::vector<float>> val; /* per tensor: row-major values, rounded to its type */
    std::vector<bool> have;
    unsigned long long call; /* this execution's number, for the plan */

    const std::vector<float> &get(int i) {
        if (!have[i]) { /* a non-virtual input: read from memory */
            const ptensor &t = P.t[i];
            std::vector<float> &v = val[i];
            v.resize(t.n);
            if (t.byval)
                v[0] = *(const float *)ptr[i];
            else
                each_elem(t, [&](size_t l, int64_t off) { v[l] = mem_load(ptr[i], off, t.dt); });
            have[i] = true;
        }
        return val[i];
    }

    /* y's values are complete: round them, write them out when y is in memory */
    void put(int y) {
        const ptensor &t = P.t[y];
        std::vector<float> &v = val[y];
        if (t.dt != CUDNN_DATA_FLOAT)
            for (float &e : v)
                e = round_to(t.dt, e);
        if (!t.virt)
            each_elem(t,
                      [&](size_t l, int64_t off) { mem_store((void *)ptr[y], off, t.dt, v[l]); });
        have[y] = true;
    }

    void pointwise(const pop &o) {
        const ptensor &ty = P.t[o.y];
        const std::vector<int64_t> &dy = ty.dim;
        size_t n = dy.size();
        const float *xv = get(o.x).data();
        const float *bv = o.b >= 0 ? get(o.b).data() : NULL;
        const float *tv = o.t >= 0 ? get(o.t).data() : NULL;
        std::vector<int64_t> sx = bstrides(P.t[o.x].dim, dy);
        std::vector<int64_t> sb =
            o.b >= 0 ? bstrides(P.t[o.b].dim, dy) : std::vector<int64_t>(n, 0);
        std::vector<int64_t> st =
            o.t >= 0 ? bstrides(P.t[o.t].dim, dy) : std::vector<int64_t>(n, 0);
        std::vector<float> &out = val[o.y];
        out.resize(ty.n);
        std::vector<int64_t> c(n, 0);
        int64_t ox = 0, ob = 0, ot = 0, inner = dy[n - 1];
        for (size_t i = 0; i < ty.n; i += (size_t)inner) {
            if (o.mode == CUDNN_POINTWISE_GEN_INDEX) {
                for (int64_t e = 0; e < inner; e++)
                    out[i + e] = (float)(o.axis == (int64_t)n - 1 ? e : c[o.axis]);
            } else {
                for (int64_t e = 0; e < inner; e++)
                    out[i + e] =
                        pw_eval(o.mode, xv[ox + e * sx[n - 1]], bv ? bv[ob + e * sb[n - 1]] : 0.0f,
                                tv ? tv[ot + e * st[n - 1]] : 0.0f);
            }
            for (int k = (int)n - 2; k >= 0; k--) {
                ox += sx[k], ob += sb[k], ot += st[k];
                if (++c[k] < dy[k]) break;
                ox -= sx[k] * dy[k], ob -= sb[k] * dy[k], ot -= st[k] * dy[k];
                c[k] = 0;
            }
        }
    }

    /* C = A B over the last two dims, batched (and broadcast) over the rest;
     * fp32, k summed in order (the nondeterministic engine reverses it on
     * every other call, as split-k atomics would reorder it) */
    void matmul(const pop &o) {
        const ptensor &ta = P.t[o.x], &tb = P.t[o.b], &tc = P.t[o.y];
        size_t n = tc.dim.size();
        int64_t M = tc.dim[n - 2], N = tc.dim[n - 1], K = ta.dim[n - 1];
        const float *av = get(o.x).data(), *bv = get(o.b).data();
        std::vector<float> &cv = val[o.y];
        cv.assign(tc.n, 0.0f);
        std::vector<int64_t> bdim(tc.dim.begin(), tc.dim.end() - 2);
        std::vector<int64_t> sa =
            bstrides(std::vector<int64_t>(ta.dim.begin(), ta.dim.end() - 2), bdim);
        std::vector<int64_t> sb =
            bstrides(std::vector<int64_t>(tb.dim.begin(), tb.dim.end() - 2), bdim);
        bool rev = engine == 0 && nondet() == ND_ENGINE0 && (call & 1);
        size_t nb = tc.n / (size_t)(M * N);
        std::vector<int64_t> c(bdim.size(), 0);
        for (size_t bi = 0; bi < nb; bi++) {
            int64_t oa = 0, ob = 0;
            for (size_t k = 0; k < bdim.size(); k++)
                oa += c[k] * sa[k], ob += c[k] * sb[k];
            const float *A = av + oa * M * K, *B = bv + ob * K * N;
            float *C = cv.data() + bi * (size_t)(M * N);
            for (int64_t m = 0; m < M; m++) {
                float *crow = C + m * N;
                for (int64_t kk = 0; kk < K; kk++) {
                    int64_t k = rev ? K - 1 - kk : kk;
                    float a = A[m * K + k];
                    const float *brow = B + k * N;
                    for (int64_t j = 0; j < N; j++)
                        crow[j] += a * brow[j];
                }
            }
            for (int k = (int)bdim.size() - 1; k >= 0; k--) {
                if (++c[k] < bdim[k]) break;
                c[k] = 0;
            }
        }
    }

    /* Y = reduce(X) over the dims where Y's extent is 1, in row-major order */
    void reduction(const pop &o) {
        const ptensor &tx = P.t[o.x], &ty = P.t[o.y];
        const float *xv = get(o.x).data();
        float init = o.mode == CUDNN_REDUCE_TENSOR_ADD   ? 0.0f
                     : o.mode == CUDNN_REDUCE_TENSOR_MUL ? 1.0f
                     : o.mode == CUDNN_REDUCE_TENSOR_MAX ? -INFINITY
                                                         : INFINITY;
        std::vector<float> &yv = val[o.y];
        yv.assign(ty.n, init);
        /* Y's row-major strides seen over X's dims (0 where reduced) */
        std::vector<int64_t> sy(ty.dim.size());
        int64_t acc = 1;
        for (int i = (int)ty.dim.size() - 1; i >= 0; i--) {
            sy[i] = ty.dim[i] == 1 ? 0 : acc;
            acc *= ty.dim[i];
        }
        ptensor view = tx;
        view.stride = sy;
        each_elem(view, [&](size_t l, int64_t oy) {
            float v = xv[l], &r = yv[oy];
            switch (o.mode) {
            case CUDNN_REDUCE_TENSOR_ADD:
                r += v;
                break;
            case CUDNN_REDUCE_TENSOR_MUL:
                r *= v;
                break;
            case CUDNN_REDUCE_TENSOR_MAX:
                r = v > r ? v : r;
                break;
            default:
                r = v < r ? v : r;
                break;
            }
        });
    }

    /* Y = X's elements laid out by X's strides, read back by Y's strides (a
     * view: VIEW_ONLY reshape; a transpose when only the strides differ) */
    cudnnStatus_t reshape(const char *fn, const pop &o) {
        const ptensor &tx = P.t[o.x], &ty = P.t[o.y];
        const float *xv = get(o.x).data();
        int64_t span = span_of(tx);
        std::vector<float> mem((size_t)span, 0.0f);
        std::vector<unsigned char> set((size_t)span, 0);
        bool clash = false;
        each_elem(tx, [&](size_t l, int64_t off) {
            clash |= set[off] != 0;
            set[off] = 1;
            mem[off] = xv[l];
        });
        if (clash)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "reshape uid %lld -> %lld: X's strides give two elements one address",
                        (long long)tx.uid, (long long)ty.uid);
        std::vector<float> &yv = val[o.y];
        yv.resize(ty.n);
        bool outside = false;
        each_elem(ty, [&](size_t l, int64_t off) {
            if (off >= span || !set[off]) {
                outside = true;
                return;
            }
            yv[l] = mem[off];
        });
        if (outside)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "reshape uid %lld -> %lld: Y's strides reach addresses X does not hold",
                        (long long)tx.uid, (long long)ty.uid);
        return CUDNN_STATUS_SUCCESS;
    }
};

cudnnStatus_t execute(const char *fn, const bdesc *plan, const bdesc *vp) {
    const program &P = *plan->prog;
    std::vector<int64_t> uids;
    attr_i64(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids);
    const battr *pa = attr(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
    std::map<int64_t, const void *> given;
    for (size_t i = 0; i < uids.size(); i++) {
        const void *p;
        memcpy(&p, pa->bytes.data() + i * sizeof p, sizeof p);
        given[uids[i]] = p;
    }
    runner r{P, plan->engine, {}, {}, {}, plan->calls++};
    size_t nt = P.t.size();
    r.ptr.assign(nt, NULL);
    r.val.resize(nt);
    r.have.assign(nt, false);
    std::set<int64_t> used;
    for (size_t i = 0; i < nt; i++) {
        const ptensor &t = P.t[i];
        if (t.virt) continue;
        auto it = given.find(t.uid);
        if (it == given.end())
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "tensor uid %lld is not virtual and not in the variant pack",
                        (long long)t.uid);
        used.insert(t.uid);
        const void *p = it->second;
        if (!p)
            return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn,
                        "the variant pack's pointer for uid %lld is NULL", (long long)t.uid);
        if (!t.byval) {
            size_t bytes = (size_t)span_of(t) * mem_size(t.dt);
            if (!device_range(p, bytes))
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "uid %lld (%p, %zu bytes from its dims and strides) is not device "
                            "memory over its whole extent",
                            (long long)t.uid, p, bytes);
            if ((uintptr_t)p % (uintptr_t)t.align)
                return fail(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, fn,
                            "uid %lld (%p) is not aligned to its declared %lld bytes",
                            (long long)t.uid, p, (long long)t.align);
        }
        r.ptr[i] = p;
    }
    for (int64_t u : uids)
        if (!used.count(u))
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "the variant pack names uid %lld, which is no non-virtual tensor of the "
                        "graph",
                        (long long)u);
    /* the workspace: what the plan asked for, device memory, apart from
     * every tensor; then overwritten, as the engines' kernels would */
    void *ws = NULL;
    memcpy(&ws, attr(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE)->bytes.data(), sizeof ws);
    size_t ws_bytes = (size_t)plan->workspace;
    if (ws_bytes) {
        if (!ws)
            return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn,
                        "the variant pack's workspace is NULL; the plan needs %zu bytes",
                        ws_bytes);
        if (!device_range(ws, ws_bytes))
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "the workspace (%p) is not device memory over the %zu bytes the plan "
                        "needs",
                        ws, ws_bytes);
        for (size_t i = 0; i < nt; i++)
            if (r.ptr[i] && !P.t[i].byval &&
                overlap(ws, ws_bytes, r.ptr[i], (size_t)span_of(P.t[i]) * mem_size(P.t[i].dt)))
                return fail(CUDNN_STATUS_BAD_PARAM, fn, "the workspace overlaps uid %lld",
                            (long long)P.t[i].uid);
        memset(ws, 0xa5, ws_bytes);
    }
    for (size_t i = 0; i < P.ops.size(); i++) {
        const pop &o = P.ops[i];
        switch (o.kind) {
        case P_POINTWISE:
            r.pointwise(o);
            break;
        case P_MATMUL:
            r.matmul(o);
            break;
        case P_REDUCTION:
            r.reduction(o);
            break;
        default: {
            cudnnStatus_t s = r.reshape(fn, o);
            if (s != CUDNN_STATUS_SUCCESS) return s;
        }
        }
        r.put(o.y);
        for (int in : {o.x, o.b, o.t})
            if (in >= 0 && P.last_use[in] == (int)i) std::vector<float>().swap(r.val[in]);
    }
    return CUDNN_STATUS_SUCCESS;
}

/* The operation graph: a live handle, at least one finalized operation,
 * every tensor id naming one tensor; then compiled for the interpreter. */
cudnnStatus_t finalize_graph(const char *fn, bdesc *d) {
    const battr *h = attr(d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE);
    void *hp = NULL;
    if (h && h->count >= 1) memcpy(&hp, h->bytes.data(), sizeof hp);
    if (!h || !reg_has(K_HANDLE, hp))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "operation graph: no live HANDLE");
    const battr *ops = attr(d, CUDNN_ATTR_OPERATIONGRAPH_OPS);
    if (!ops || ops->count < 1) return fail(CUDNN_STATUS_BAD_PARAM, fn, "operation graph: no OPS");
    std::map<int64_t, const bdesc *> uids;
    for (int64_t i = 0; i < ops->count; i++) {
        const bdesc *op = attr_desc(d, CUDNN_ATTR_OPERATIONGRAPH_OPS, (int)i);
        if (!op || !is_operation(op->type))
            return fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, fn,
                        "operation graph: op %lld is not an operation descriptor", (long long)i);
        for (const auto &kv : op->attrs) {
            if (kv.second.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) continue;
            for (int64_t j = 0; j < kv.second.count; j++) {
                const bdesc *t = attr_desc(op, kv.first, (int)j);
                if (!t || t->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR) continue;
                std::vector<int64_t> uid;
                attr_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, uid);
                auto it = uids.find(uid[0]);
                if (it != uids.end() && it->second != t)
                    return fail(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, fn,
                                "operation graph: two tensors share unique id %lld",
                                (long long)uid[0]);
                uids[uid[0]] = t;
            }
        }
    }
    return compile(fn, d);
}

/* ---- heuristics, engines, plans, variant packs ----------------------------------------------- */

/* The engines every compiled graph offers, in the heuristics' order, 0
 * then 1: both compute the same, deterministically, with no numerical
 * note. GT_EMU_CUDNN_NONDET (read at every call) changes that:
 *   note     every engine carries CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
 *            and still computes deterministically: the SDPA engines' note
 *            is about graphs with an atomically updated dQ accumulator,
 *            which the deterministic graph has not (cudnn-frontend and
 *            llm.c do not filter on it);
 *   engine0  engine 0 carries the note and is nondeterministic: its
 *            matmuls sum in reversed order on every other execution of a
 *            plan, as split-k atomics would reorder them (what the repeat
 *            tests must see).
 * Fault injection (read at every finalize): GT_EMU_CUDNN_PLAN_STATUS makes
 * every execution plan's finalize fail with that status (a runtime-compiled
 * engine that does not build), GT_EMU_CUDNN_GRAPH_STATUS the operation
 * graph's. */
const int N_ENGINES = 2;

void set_attr(bdesc *d, int name, cudnnBackendAttributeType_t type, int64_t count,
              const void *elems) {
    battr a;
    a.type = type;
    a.count = count;
    const unsigned char *b = (const unsigned char *)elems;
    a.bytes.assign(b, b + (size_t)count * attr_elem_size(type));
    d->attrs[name] = a;
}

cudnnStatus_t finalize_heur(const char *fn, bdesc *d) {
    bdesc *g = attr_desc(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
    if (!g || !g->prog)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "heuristics: no finalized OPERATION_GRAPH");
    int mode = attr_enum(d, CUDNN_ATTR_ENGINEHEUR_MODE, -1);
    if (mode != CUDNN_HEUR_MODE_INSTANT && mode != CUDNN_HEUR_MODE_B &&
        mode != CUDNN_HEUR_MODE_FALLBACK && mode != CUDNN_HEUR_MODE_A)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "heuristics: MODE %d is not a heuristics mode",
                    mode);
    d->prog = g->prog;
    return CUDNN_STATUS_SUCCESS;
}

/* The attributes the library fills into descriptors the caller created:
 * ENGINEHEUR_RESULTS (engine configs), ENGINECFG_ENGINE (an engine). */
cudnnStatus_t get_filled(const char *fn, bdesc *d, int name, cudnnBackendAttributeType_t type,
                         int64_t req, int64_t *count, void *elems) {
    if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
        return fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, fn,
                    "attribute %d has type CUDNN_TYPE_BACKEND_DESCRIPTOR, not %d", name, (int)type);
    bool heur = name == CUDNN_ATTR_ENGINEHEUR_RESULTS;
    int64_t have = heur ? N_ENGINES : 1;
    cudnnBackendDescriptorType_t want =
        heur ? CUDNN_BACKEND_ENGINECFG_DESCRIPTOR : CUDNN_BACKEND_ENGINE_DESCRIPTOR;
    int64_t n = req < have ? req : have;
    for (int64_t i = 0; i < n; i++) {
        bdesc *o = bd(((void **)elems)[i]);
        if (!o || o->type != want)
            return fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, fn,
                        "attribute %d: element %lld is not a live descriptor of type %d (create "
                        "them before asking)",
                        name, (long long)i, (int)want);
        if (o->finalized)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "attribute %d: element %lld is already finalized", name, (long long)i);
    }
    for (int64_t i = 0; i < n; i++) {
        bdesc *o = bd(((void **)elems)[i]);
        o->attrs.clear();
        o->prog = d->prog;
        o->engine = heur ? i : d->engine;
        if (heur) {
            set_attr(o, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, NULL);
        } else {
            cudnnBackendNumericalNote_t nd = CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
            set_attr(o, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &o->engine);
            nondet_mode m = nondet();
            bool noted = m == ND_NOTE || (m == ND_ENGINE0 && o->engine == 0);
            set_attr(o, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, noted ? 1 : 0,
                     &nd);
            set_attr(o, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, 0, NULL);
            set_attr(o, CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, NULL);
        }
        o->finalized = true;
    }
    if (count) *count = have;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_plan(const char *fn, bdesc *d) {
    const battr *h = attr(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
    void *hp = NULL;
    if (h && h->count >= 1) memcpy(&hp, h->bytes.data(), sizeof hp);
    if (!h || !reg_has(K_HANDLE, hp))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "execution plan: no live HANDLE");
    bdesc *cfg = attr_desc(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
    if (!cfg || !cfg->finalized || !cfg->prog)
        return fail(CUDNN_STATUS_BAD_PARAM, fn,
                    "execution plan: ENGINE_CONFIG is not an engine config from the heuristics");
    cudnnStatus_t inj;
    if (injected_status("GT_EMU_CUDNN_PLAN_STATUS", &inj))
        return fail(inj, fn,
                    "execution plan for engine %lld: nvrtc: the engine's kernel failed to compile "
                    "(injected: GT_EMU_CUDNN_PLAN_STATUS)",
                    (long long)cfg->engine);
    d->prog = cfg->prog;
    d->engine = cfg->engine;
    /* The interpreter keeps its intermediates in host memory; the plan asks
     * for what an engine staging its largest intermediate in fp32 would,
     * so that the caller's workspace path runs (execute checks it and
     * writes over it). */
    int64_t ws = 0;
    for (const ptensor &t : d->prog->t)
        if (t.virt && (int64_t)t.n * 4 > ws) ws = (int64_t)t.n * 4;
    d->workspace = ws;
    set_attr(d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &ws);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_variant_pack(const char *fn, bdesc *d) {
    const battr *u = attr(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS),
                *p = attr(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS),
                *w = attr(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
    if (!u || !p || !w)
        return fail(CUDNN_STATUS_BAD_PARAM, fn,
                    "variant pack: UNIQUE_IDS, DATA_POINTERS and WORKSPACE are required");
    if (u->count != p->count)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "variant pack: %lld unique ids, %lld pointers",
                    (long long)u->count, (long long)p->count);
    if (w->count != 1)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "variant pack: WORKSPACE takes one pointer");
    std::vector<int64_t> ids;
    attr_i64(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, ids);
    std::set<int64_t> seen;
    for (int64_t id : ids)
        if (!seen.insert(id).second)
            return fail(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, fn,
                        "variant pack: unique id %lld given twice", (long long)id);
    return CUDNN_STATUS_SUCCESS;
}

} // namespace

extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                                                       cudnnBackendDescriptor_t *descriptor) {
    const char *fn = "cudnnBackendCreateDescriptor";
    if (!descriptor) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn, "descriptor is NULL");
    if ((int)descriptorType < 0 ||
        (int)descriptorType > (int)CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown descriptor type %d", (int)descriptorType);
    bdesc *d = new bdesc();
    d->type = descriptorType;
    d->finalized = false;
    reg_add(K_BACKEND, d);
    *descriptor = d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
    if (!reg_del(K_BACKEND, descriptor))
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendDestroyDescriptor",
                    "not a live backend descriptor: %p", descriptor);
    delete (bdesc *)descriptor;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                                   cudnnBackendAttributeName_t attributeName,
                                                   cudnnBackendAttributeType_t attributeType,
                                                   int64_t elementCount,
                                                   const void *arrayOfElements) {
    const char *fn = "cudnnBackendSetAttribute";
    bdesc *d = bd(descriptor);
    if (!d)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live backend descriptor: %p", descriptor);
    if (d->finalized)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d: the descriptor is already finalized",
                    (int)attributeName);
    if (elementCount < 0 || (elementCount > 0 && !arrayOfElements))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d: %lld elements at %p",
                    (int)attributeName, (long long)elementCount, arrayOfElements);
    const attr_spec *sp = spec_of(attributeName);
    if (!sp)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                    "attribute %d (on descriptor type %d) is not emulated by the graph stand-in",
                    (int)attributeName, (int)d->type);
    {
        if (sp->owner != d->type)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "attribute %d belongs to descriptor type %d, not %d", (int)attributeName,
                        (int)sp->owner, (int)d->type);
        if (sp->type != attributeType)
            return fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, fn,
                        "attribute %d has type %d, not %d", (int)attributeName, (int)sp->type,
                        (int)attributeType);
    }
    bool many = attributeName == CUDNN_ATTR_TENSOR_DIMENSIONS ||
                attributeName == CUDNN_ATTR_TENSOR_STRIDES ||
                attributeName == CUDNN_ATTR_OPERATIONGRAPH_OPS ||
                attributeName == CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS ||
                attributeName == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS;
    if (!many && elementCount != 1)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d takes one element, not %lld",
                    (int)attributeName, (long long)elementCount);
    if (attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR)
        for (int64_t i = 0; i < elementCount; i++) {
            const bdesc *r = bd(((void *const *)arrayOfElements)[i]);
            if (!r)
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "attribute %d: element %lld is not a live backend descriptor",
                            (int)attributeName, (long long)i);
            if (sp && sp->takes >= 0 && (int)r->type != sp->takes)
                return fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, fn,
                            "attribute %d takes descriptor type %d, got %d", (int)attributeName,
                            sp->takes, (int)r->type);
            /* descriptors referenced by an operation or graph must be finalized;
             * engine configs and engines are filled in by the library */
            if (!r->finalized && d->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
                return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, fn,
                            "attribute %d: element %lld is not finalized", (int)attributeName,
                            (long long)i);
        }
    if (attributeType == CUDNN_TYPE_HANDLE && elementCount >= 1 &&
        !reg_has(K_HANDLE, *(void *const *)arrayOfElements))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d: not a live cuDNN handle",
                    (int)attributeName);
    battr a;
    a.type = attributeType;
    a.count = elementCount;
    size_t bytes = (size_t)elementCount * attr_elem_size(attributeType);
    a.bytes.assign((const unsigned char *)arrayOfElements,
                   (const unsigned char *)arrayOfElements + bytes);
    d->attrs[attributeName] = a;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                                   cudnnBackendAttributeName_t attributeName,
                                                   cudnnBackendAttributeType_t attributeType,
                                                   int64_t requestedElementCount,
                                                   int64_t *elementCount, void *arrayOfElements) {
    const char *fn = "cudnnBackendGetAttribute";
    bdesc *d = bd(descriptor);
    if (!d)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live backend descriptor: %p", descriptor);
    if (!d->finalized)
        return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, fn,
                    "attribute %d: the descriptor is not finalized", (int)attributeName);
    if (requestedElementCount < 0 || (requestedElementCount > 0 && !arrayOfElements))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d: bad request", (int)attributeName);
    if ((d->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR &&
         attributeName == CUDNN_ATTR_ENGINEHEUR_RESULTS) ||
        (d->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR &&
         attributeName == CUDNN_ATTR_ENGINECFG_ENGINE))
        return get_filled(fn, d, attributeName, attributeType, requestedElementCount, elementCount,
                          arrayOfElements);
    const battr *a = attr(d, attributeName);
    if (!a)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d is not available here",
                    (int)attributeName);
    if (a->type != attributeType)
        return fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, fn, "attribute %d has type %d, not %d",
                    (int)attributeName, (int)a->type, (int)attributeType);
    if (elementCount) *elementCount = a->count;
    int64_t n = requestedElementCount < a->count ? requestedElementCount : a->count;
    if (n > 0) memcpy(arrayOfElements, a->bytes.data(), (size_t)n * attr_elem_size(a->type));
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
    const char *fn = "cudnnBackendFinalize";
    bdesc *d = bd(descriptor);
    if (!d)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live backend descriptor: %p", descriptor);
    if (d->finalized)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "descriptor type %d is already finalized",
                    (int)d->type);
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
        s = finalize_tensor(fn, d);
        break;
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
        if (!attr(d, CUDNN_ATTR_POINTWISE_MODE) || !attr(d, CUDNN_ATTR_POINTWISE_MATH_PREC))
            s = fail(CUDNN_STATUS_BAD_PARAM, fn, "pointwise: MODE and MATH_PREC are required");
        break;
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
        if (!attr(d, CUDNN_ATTR_MATMUL_COMP_TYPE))
            s = fail(CUDNN_STATUS_BAD_PARAM, fn, "matmul: COMP_TYPE is required");
        break;
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
        if (!attr(d, CUDNN_ATTR_REDUCTION_OPERATOR) || !attr(d, CUDNN_ATTR_REDUCTION_COMP_TYPE))
            s = fail(CUDNN_STATUS_BAD_PARAM, fn, "reduction: OPERATOR and COMP_TYPE are required");
        break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: {
        cudnnStatus_t inj;
        if (injected_status("GT_EMU_CUDNN_GRAPH_STATUS", &inj))
            s = fail(inj, fn, "operation graph: (injected: GT_EMU_CUDNN_GRAPH_STATUS)");
        else
            s = finalize_graph(fn, d);
        break;
    }
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        s = finalize_heur(fn, d);
        break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        s = finalize_plan(fn, d);
        break;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
        s = finalize_variant_pack(fn, d);
        break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        s = fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                 "the graph stand-in's engines and engine configs come from the heuristics "
                 "(CUDNN_ATTR_ENGINEHEUR_RESULTS), they are not built by hand (descriptor type %d)",
                 (int)d->type);
        break;
    default:
        if (is_operation(d->type)) s = finalize_op(fn, d);
        break;
    }
    if (s == CUDNN_STATUS_SUCCESS) d->finalized = true;
    return s;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendExecute(cudnnHandle_t handle,
                                              cudnnBackendDescriptor_t executionPlan,
                                              cudnnBackendDescriptor_t variantPack) {
    const char *fn = "cudnnBackendExecute";
    if (!reg_has(K_HANDLE, handle))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live handle: %p", (void *)handle);
    bdesc *p = bd(executionPlan), *v = bd(variantPack);
    if (!p || p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !v ||
        v->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not an execution plan and a variant pack");
    if (!p->finalized || !p->prog)
        return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, fn,
                    "the execution plan is not finalized");
    if (!v->finalized)
        return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, fn, "the variant pack is not finalized");
    return execute(fn, p, v);
}

} // extern "C"

