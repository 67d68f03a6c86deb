/* loader_fill.c — the loader's side of file mode's copy filled while it is read (fill.c owns the
 * copy: pieces, states, the download thread): which records' pieces are asked for ahead of the
 * reader, what a seek forgets, the bytes counted into the epoch they arrive in, and the take-over
 * of the copy once it is whole. The loader's thread only.
 *
 * Contract: the pieces of the records up to FILL_AHEAD positions past the cursor are asked for
 * before a record is read (FILL_HELD at the open and while a launch holds the read-ahead); the
 * download starts once the hold is released after FILL_START records; the copy is taken over
 * (its folder's dataset.json written, the folder's lock given back, the copy read as any checked
 * copy) only when no record handed out points into the fill's buffer. */
#include "loader_internal.h"

/* FILL_HELD at the open, for epoch 0's start (a seek elsewhere forgets them), and at a launch
 * (held: baton_loader_hold_ahead); the download starts once the hold is released after FILL_START
 * records (or a second after the open, for a reader that reads nothing): the first batch's
 * decoding does not share the cores with transfers that can wait (the store serving on the same
 * machine, as pipe mode found). */
#define FILL_AHEAD 256
#define FILL_HELD 128
#define FILL_START 128

/* The filled copy complete: the folder made a dataset (its dataset.json), the turn given back, and
 * the copy read from now on as any checked local copy. */
static int finish(baton_loader *l, baton_err *err)
{
    io_fill_retire(l->fill);   /* kept, retired, until the loader closes: another thread's stats read it */
    l->fill_whole = 1;
    int rc = io_loader_write_local(l, err);
    baton_lock_release(l->dl_lock);
    l->dl_lock = -1;
    return rc ? rc : io_loader_open_local(l, 0, err);
}

/* File mode filling its copy, at a seek: records asked for ahead that the reader will not read
 * next (asked at the open for epoch 0's start, and the cursor is elsewhere) are forgotten, so the
 * first record of the new position does not queue behind them; asking goes on from the cursor. */
int io_loader_fill_seek(baton_loader *l, baton_err *err)
{
    int next = l->cur.epoch == l->fill_epoch && l->cur.position == l->fill_read_to;
    if (next) return BATON_OK;
    int rc = l->fill_asked > l->fill_read_to ? io_fill_forget(l->fill, err) : BATON_OK;
    l->fill_epoch = l->cur.epoch;
    l->fill_read_to = l->fill_asked = l->cur.position;
    return rc;
}

/* What arrived counted in the epoch being read; the copy taken over once whole when `take` (not
 * while a record handed out points into the fill's buffer). */
int io_loader_fill_poll(baton_loader *l, int take, baton_err *err)
{
    uint64_t got;
    int done, rc = io_fill_poll(l->fill, &got, &done, err);
    if (got) io_loader_count_fetched(l, l->cur.epoch, got);
    return rc || !done || !take ? rc : finish(l, err);
}

/* Ask for the pieces of the cursor's epoch's positions up to `ahead` past the cursor. */
static int ask(baton_loader *l, uint64_t ahead, baton_err *err)
{
    int rc = BATON_OK;
    uint64_t upto = l->cur.position + ahead, size = baton_loader_epoch_size(l);
    if (upto > size) upto = size;
    if (l->has_end && l->end.epoch == l->cur.epoch && upto > l->end.position) upto = l->end.position;
    if (l->fill_asked < l->cur.position) l->fill_asked = l->cur.position;
    for (; rc == BATON_OK && l->fill_asked < upto; l->fill_asked++) {
        uint64_t g = l->perm[l->fill_asked];
        uint32_t s = io_loader_shard_of(l, g);
        uint64_t j = g - l->shard_first[s];
        rc = io_fill_want(l->fill, s, l->off[s][j], io_loader_rec_end(l, s, j + 1), err);
    }
    return rc;
}

int io_loader_fill_ahead(baton_loader *l, baton_err *err)
{
    int rc = ask(l, l->hold_ahead ? FILL_HELD : FILL_AHEAD, err);
    if (++l->fill_reads >= FILL_START && !l->hold_ahead && !l->fill_started) {
        io_fill_start(l->fill);
        l->fill_started = 1;
    }
    return rc;
}

int io_loader_fill_launch(baton_loader *l, baton_err *err) { return ask(l, FILL_HELD, err); }
