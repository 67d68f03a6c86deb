/* nn_dnnl.h — the oneDNN pieces nn's two users of it share: the kernel table (kern_dnnl.c) and the
 * folded inference plan (fold_dnnl.c). One process-wide CPU engine (the table's), f32 memory
 * descriptors by layout tag, and primitive attributes (user-managed scratchpad, optional sum and
 * ReLU post-ops). Nothing outside src/nn includes this. */
#ifndef BATON_NN_DNNL_H
#define BATON_NN_DNNL_H

#include <oneapi/dnnl/dnnl.h>

#include "nn_internal.h"

/* f32 descriptor of nd dims (nd <= DNNL_MAX_NDIMS) in layout tag (dnnl_format_tag_any: the
 * primitive's choice) (dnnl_common.c) */
dnnl_status_t nn_dnnl_md(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_format_tag_t tag);
/* the same of data type dt (dnnl_bf16 for the bfloat16 paths) */
dnnl_status_t nn_dnnl_md_dt(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_data_type_t dt,
                            dnnl_format_tag_t tag);
/* attributes with a user-managed scratchpad, then the post-ops: sum onto dst (sum != 0), then ReLU
 * (relu != 0); the caller destroys *attr, also on failure when it is not NULL (dnnl_common.c) */
dnnl_status_t nn_dnnl_attr(dnnl_primitive_attr_t *attr, int sum, int relu);
/* the kernel table's CPU engine, created once (dnnl_prim.c, at the table's first use in
 * kern_dnnl.c); NULL with a message in err when oneDNN is unavailable. Never destroyed; streams
 * are each user's own. */
dnnl_engine_t nn_dnnl_engine(baton_err *err);

#endif
