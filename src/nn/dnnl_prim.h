/* dnnl_prim.h — the oneDNN kernel table's primitives (dnnl_prim.c), shared by the table's entries
 * (kern_dnnl.c) and nothing else: the operations, the key that names a primitive (operation,
 * geometry, the bf16 flag), and the call that runs the calling thread's cached primitive for a key
 * on the caller's arrays. Nothing outside src/nn includes this. */
#ifndef BATON_NN_DNNL_PRIM_H
#define BATON_NN_DNNL_PRIM_H

#include "nn_dnnl.h"

#include <stdint.h>

enum nn_prim_op {
    OP_CONV_FWD, OP_CONV_BWD_DATA, OP_CONV_BWD_W,
    OP_IP_FWD, OP_IP_BWD_DATA, OP_IP_BWD_W,
    OP_RELU_FWD, OP_RELU_BWD, OP_ADD,
    OP_COUNT
};
extern const char *const nn_prim_op_name[OP_COUNT];   /* "conv_fwd", ... (for messages) */

#define KEY_LEN 15     /* op + up to 13 geometry values + the bf16 flag */
#define KEY_BF16 14    /* 1: the bfloat16 table's call (convolutions and inner products); 2: its call
                        * of a convolution on the f32 kernels (channels-last activations too); 1 | 2:
                        * its convolution's y (forward's output, backward's d(output)) in bfloat16,
                        * 1 | 4: its x in bfloat16 (conv_fwd16, conv_bwd16) */

/* A primitive's name: v[0] the operation, then its geometry (v[13]: a convolution's ReLU post-op),
 * v[KEY_BF16] the bfloat16 flag; unused values 0. */
typedef struct pkey {
    int64_t v[KEY_LEN];
} pkey;

pkey nn_prim_key(int op, int nv, const int64_t *vals);
/* a convolution's key: its geometry and whether it has a bias (post-op and bf16 flag 0) */
pkey nn_prim_conv_key(int op, const baton_nn_conv_geom *g, int bias);

/* Run the primitive for key k on the caller's arrays (ptrs in the order of the entry's arguments).
 * Returns 1 when oneDNN did the work, 0 when the caller must run the reference kernel (a failure
 * is logged once per operation). Only after nn_prim_init succeeded. */
int nn_prim_dispatch(const pkey *k, void *const *ptrs);

/* A convolution's two backward passes share d(output): nn_prim_stage runs input argument i's
 * reorder of key k's primitive (into its layout and type) from user into the calling thread's
 * stage buffer and returns the staged copy — NULL when that argument needs no reorder or it
 * failed (the caller then passes the plain array as usual). nn_prim_dispatch_staged is
 * nn_prim_dispatch with argument i read from that copy instead of reordered again from ptrs[i],
 * where its primitive's layout for it is the staged one (otherwise as nn_prim_dispatch). The copy
 * lasts until the thread's next nn_prim_stage. */
const void *nn_prim_stage(const pkey *k, int i, const void *user);
int nn_prim_dispatch_staged(const pkey *k, void *const *ptrs, int i, const void *staged);

/* A bf16 convolution's input converted once (forward) and read again by backward-weights:
 * nn_prim_save runs input argument i's reorder of key k's primitive from user into the calling
 * thread's copy named (name, user) and returns it — NULL when the argument needs no reorder or it
 * failed (no copy of (name, user) is then current). A convolution's name is its geometry (v[1] the
 * batch size): the save takes the place of user's copy for another batch size, if any.
 * nn_prim_saved returns that copy while it is current: the process's last save of (name, user), on
 * this thread (a later one on any thread, a failed one, or the eviction of the thread's least
 * recently used copy beyond SAVE_CAP make it stale); NULL otherwise. The copy holds user's values
 * at the save: a caller reads it only where user is unchanged since (the backward of the forward
 * that saved it). nn_prim_dispatch_copies is nn_prim_dispatch with each input i whose staged[i] is
 * set (a staged or saved copy of this thread) read from that copy where its layout is the
 * primitive's for it, reordered from ptrs[i] otherwise. */
const void *nn_prim_save(const pkey *k, int i, const void *user, const pkey *name);
const void *nn_prim_saved(const pkey *name, const void *user);
int nn_prim_dispatch_copies(const pkey *k, void *const *ptrs, const void *const *staged);

/* Once per process: the engine, the attributes and the threads' key; 0, or -1 with why said. */
int nn_prim_init(char *why, size_t cap);
dnnl_engine_t nn_prim_engine(void);

#endif
