/* dnnl_common.c — small oneDNN helpers shared by the kernel table (kern_dnnl.c) and the folded
 * inference plan (fold_dnnl.c): memory descriptors (f32, or of a given type) and primitive attributes
 * (nn_dnnl.h).
 *
 * Contract: each returns oneDNN's status; nothing is allocated but the attribute object asked for. */
#include "nn_dnnl.h"

dnnl_status_t nn_dnnl_md_dt(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_data_type_t dt,
                            dnnl_format_tag_t tag)
{
    dnnl_dims_t d;
    for (int i = 0; i < nd; i++) d[i] = dims[i];
    return dnnl_memory_desc_init_by_tag(md, nd, d, dt, tag);
}

dnnl_status_t nn_dnnl_md(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_format_tag_t tag)
{
    return nn_dnnl_md_dt(md, nd, dims, dnnl_f32, tag);
}

dnnl_status_t nn_dnnl_attr(dnnl_primitive_attr_t *attr, int sum, int relu)
{
    dnnl_status_t st = dnnl_primitive_attr_create(attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    if (st != dnnl_success || (!sum && !relu)) return st;
    dnnl_post_ops_t po = NULL;
    st = dnnl_post_ops_create(&po);
    if (st == dnnl_success && sum) st = dnnl_post_ops_append_sum(po, 1.0f);
    if (st == dnnl_success && relu) st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(*attr, po);
    if (po) dnnl_post_ops_destroy(po);
    return st;
}
