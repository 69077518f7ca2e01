/* ckpt.c — one checkpoint and one recovery (see ckpt.h and
 * docs/exactly-once.md for the order of the steps and why).
 *
 * The pause of a Kafka exactly-once checkpoint is mostly waiting: for the
 * producer's acknowledgements, for the disk's sync of the PREPARED record,
 * for the transaction coordinator. The protocol needs only one order among
 * them: the PREPARED record durable before the commit (DESIGN.md §4). So
 * the operators' snapshot and the record's synced write run on a thread of
 * their own (ck_writer_t), while the worker flushes the producer and sends
 * the offsets to the transaction (it touches nothing but the sink
 * meanwhile, so the operators are the thread's until the join); it
 * commits once both are done. Offsets in an open transaction are invisible until the commit,
 * so a crash anywhere before it leaves a transaction the next producer
 * aborts, exactly as before. At-least-once and the file sink keep the
 * serial order (their recovery takes a PREPARED record as complete: the
 * flush or the staged files must come first), and so does distributed
 * mode, whose state-topic records join the transaction after the write;
 * STREAMVISOR_SERIAL_CHECKPOINT=1 keeps it everywhere (a measurement's
 * control).
 *
 * After the commit, the COMMITTED mark and retention run on a thread of
 * their own too (sv_ckpt_tail_t, standalone): recovery never needs the
 * mark, which only says early what recovery would decide (a kill at
 * after_commit leaves the same state). The next checkpoint waits for it
 * before anything else, so the store's writes of one member stay in
 * order; the worker waits for it (sv_ckpt_settle) before saying a
 * checkpoint committed to anyone who asked, and at the end.
 *
 * The id's sequence write and retention's deletes are not synced
 * themselves: the next synced write (the PREPARED record) syncs the WAL
 * with them, before anything outside the process refers to the id. */
#define _GNU_SOURCE
#include "supervisor/ckpt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/util.h"
#include "supervisor/killpoint.h"

typedef Streamvisor__CheckpointRecord ckrec_t;

/* A checkpoint error "<what>: <cause>", keeping the cause's flags. */
static sv_error_t *ck_error(const sv_ckpt_conf_t *conf, sv_error_t *cause,
			    const char *what)
{
	sv_error_t *err = sv_error_new(SV_ERR_CHECKPOINT, "%s: %s", what,
				       cause ? cause->message : "");
	if (cause) {
		err->retriable = cause->retriable;
		err->fatal = cause->fatal;
		sv_error_destroy(cause);
	}
	return sv_error_set_job(err, conf->job_id, conf->attempt);
}

/* ---- take ---- */

/* Snapshot every stateful operator of pl into ops[k] and opbufs[k] (sized
 * for the pipeline), adding their bytes to rec->bytes. delta_of > 0: an
 * operator that can writes only what changed since that checkpoint
 * (snapshot_delta), and rec->delta_of names it; otherwise full snapshots.
 * *nops_out is the number of buffers to free, on error too. */
static sv_error_t *snapshot_ops(const sv_ckpt_conf_t *conf, sv_pipeline_t *pl,
				int64_t delta_of, ckrec_t *rec,
				Streamvisor__OperatorState *ops,
				sv_buf_t *opbufs, size_t *nops_out)
{
	size_t nops = 0;
	for (size_t i = 0; i < sv_pipeline_len(pl); i++) {
		sv_op_t *op = sv_pipeline_op(pl, i);
		if (!op->ops->snapshot)
			continue;
		sv_buf_init(&opbufs[nops]);
		bool delta = false;
		sv_error_t *err = NULL;
		if (delta_of > 0 && op->ops->snapshot_delta)
			err = op->ops->snapshot_delta(op, &opbufs[nops],
						      &delta);
		if (!err && !delta)
			err = op->ops->snapshot(op, &opbufs[nops]);
		if (err) {
			*nops_out = nops + 1;
			return ck_error(conf, err,
					"cannot snapshot an operator");
		}
		Streamvisor__OperatorState *os = &ops[nops];
		streamvisor__operator_state__init(os);
		os->index = (uint32_t)i;
		os->kind = (char *)op->ops->name;
		os->state.data = (uint8_t *)opbufs[nops].data;
		os->state.len = opbufs[nops].len;
		os->delta = delta;
		if (delta)
			rec->delta_of = delta_of;
		rec->bytes += (int64_t)opbufs[nops].len;
		nops++;
	}
	*nops_out = nops;
	return NULL;
}

/* The record of checkpoint id as PREPARED: positions (pos, n), watermarks,
 * operator state, sink state. The record points into offs (n entries),
 * ops and opbufs (one per pipeline operator), which the caller frees. */
static sv_error_t *build_record(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
				const sv_partpos_t *pos, size_t n,
				const sv_partpos_t *pos2, size_t n2, int64_t id,
				int64_t wm, const sv_buf_t *sink_state,
				ckrec_t *rec,
				Streamvisor__PartitionOffset *offs,
				Streamvisor__OperatorState *ops,
				sv_buf_t *opbufs, size_t *nops_out)
{
	rec->id = id;
	rec->job_id = (char *)conf->job_id;
	rec->attempt = conf->attempt;
	rec->plan_id = (char *)conf->plan_id;
	rec->status = STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED;
	rec->watermark_ms = wm;
	rec->n_offsets = n + n2;
	rec->offsets = sv_calloc(n + n2 ? n + n2 : 1, sizeof(*rec->offsets));
	for (size_t i = 0; i < n + n2; i++) {
		bool right = i >= n;
		const sv_partpos_t *pp = right ? &pos2[i - n] : &pos[i];
		Streamvisor__PartitionOffset *o = &offs[i];
		streamvisor__partition_offset__init(o);
		o->topic = (char *)(right ? p->topic2 : conf->topic);
		o->partition = pp->partition;
		o->next_offset = pp->next_offset;
		o->watermark_ms = sv_watermarks_partition(
			right ? p->wm2 : p->wm, pp->partition);
		o->input = right;
		rec->offsets[i] = o;
	}
	sv_ckpt_incr_t *incr = conf->incr;
	bool try_delta = incr && incr->full_every > 1 && incr->prev > 0 &&
		incr->chain + 1 < incr->full_every &&
		incr->delta_bytes <= incr->full_bytes;
	rec->delta_of = 0;
	size_t nops;
	sv_error_t *err = snapshot_ops(conf, p->pl, try_delta ? incr->prev : 0,
				       rec, ops, opbufs, &nops);
	*nops_out = nops;
	if (err)
		return err;
	rec->n_operators = nops;
	rec->operators = sv_calloc(nops ? nops : 1, sizeof(*rec->operators));
	for (size_t i = 0; i < nops; i++)
		rec->operators[i] = &ops[i];
	rec->sink_state.data = (uint8_t *)sink_state->data;
	rec->sink_state.len = sink_state->len;
	return NULL;
}

static sv_error_t *commit_steps(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
				int64_t id, int64_t wm, int64_t m0,
				const sv_topic_offsets_t *offsets,
				const int32_t *tasks, size_t ntasks, int member,
				bool offsets_sent, sv_error_t *err,
				sv_ckpt_info_t *info);

/* Step k of the checkpoint ended now: its time since *us, which moves on. */
static void step_done(sv_ckpt_info_t *info, int k, int64_t *us)
{
	int64_t now = sv_mono_us();
	info->step_us[k] += now - *us;
	*us = now;
}

/* The synced PREPARED write of one checkpoint on a thread of its own:
 * rec (and trecs, ntrecs task records at parallelism > 1) borrowed until
 * ck_writer_join. */
typedef struct ck_writer {
	pthread_t th;
	bool started; /* on its thread; false: written by join */
	sv_ckstore_t *store;
	const ckrec_t *rec;
	const ckrec_t *const *trecs;
	size_t ntrecs;
	/* frees an operator's snapshot buffer once the store copied it
	 * into its write batch (sv_ckstore_drop_fn), or NULL */
	sv_ckstore_drop_fn *drop;
	void *drop_arg;
	/* run first on the thread, or NULL: the snapshot into rec (the
	 * worker meanwhile only flushes the sink and sends the offsets, so
	 * the operators are the thread's until the join) */
	sv_error_t *(*build)(void *opaque);
	void *build_arg;
	int64_t build_us; /* build's time */
	sv_error_t *err;
	int64_t us; /* the write's own time */
} ck_writer_t;

static void ck_writer_run(ck_writer_t *w)
{
	if (w->build) {
		int64_t b = sv_mono_us();
		w->err = w->build(w->build_arg);
		w->build_us = sv_mono_us() - b;
		if (w->err)
			return;
	}
	/* a test holds the write back until the offsets were sent, and kills
	 * there: offsets in the open transaction, no PREPARED record yet */
	sv_delaypoint("prepared_write");
	sv_killpoint("prepared_write");
	int64_t t = sv_mono_us();
	w->err = w->trecs
		? sv_ckstore_put_tasks_dropping(w->store, w->rec, w->trecs,
						w->ntrecs, w->drop, w->drop_arg)
		: sv_ckstore_put_dropping(w->store, w->rec, w->drop,
					  w->drop_arg);
	w->us = sv_mono_us() - t;
}

/* sv_ckstore_drop_fn of a parallelism-1 record: opaque is its operators'
 * snapshot buffers (rec->operators[k] points into opbufs[k]); the write
 * batch holds a copy now, so a large state is not held a third time
 * beside the batch and the memtable during the synced write. */
static void drop_opbuf(void *opaque, size_t r, size_t op)
{
	SV_UNUSED(r);
	sv_buf_release(&((sv_buf_t *)opaque)[op]);
}

/* The same for task records: opaque is the tasks' buffer arrays. */
static void drop_task_opbuf(void *opaque, size_t r, size_t op)
{
	sv_buf_release(&((sv_buf_t **)opaque)[r][op]);
}

static void *ck_writer_main(void *opaque)
{
	ck_writer_t *w = opaque;
	pthread_setname_np(pthread_self(), "sv-ckwrite");
	ck_writer_run(w);
	return NULL;
}

static void ck_writer_start(ck_writer_t *w)
{
	/* no thread to be had: the write happens at the join instead */
	w->started = pthread_create(&w->th, NULL, ck_writer_main, w) == 0;
}

/* The write's outcome, once it is durable. */
static sv_error_t *ck_writer_join(ck_writer_t *w)
{
	if (w->started)
		pthread_join(w->th, NULL);
	else
		ck_writer_run(w);
	return w->err;
}

/* STREAMVISOR_SERIAL_CHECKPOINT=1: every step in the serial order, the
 * id synced (the control of bench/BASELINE.md's paired runs). */
static bool serial_forced(void)
{
	const char *e = getenv("STREAMVISOR_SERIAL_CHECKPOINT");
	return e && *e && strcmp(e, "0");
}

/* The PREPARED write may run beside the flush and the offsets: the sink
 * carries the offsets in its transaction (Kafka: the commit is the atomic
 * point and its prepare leaves no state for the record), standalone. */
static bool overlap_write(const sv_ckpt_conf_t *conf, const sv_ckpt_parts_t *p)
{
	if (!conf->transactional || !p->snk->ops->txn_offsets || p->grouped ||
	    p->on_tasks)
		return false;
	return !serial_forced();
}

/* The checkpoint's id. Its sequence write need not be synced itself when
 * nothing outside this process can refer to the id before the synced
 * PREPARED write, which makes it durable too (sv_ckstore_next_id_lazy):
 * Kafka exactly-once (offsets naming it commit only after that write) and
 * at-least-once (its group commit follows it). The file sink stages files
 * under the id before the record, and distributed mode names it in its
 * tags: synced as before. */
static sv_error_t *new_id(const sv_ckpt_conf_t *conf, const sv_ckpt_parts_t *p,
			  int64_t *id)
{
	bool lazy = !p->grouped && !p->on_tasks && !serial_forced() &&
		(!conf->transactional || p->snk->ops->txn_offsets);
	return lazy ? sv_ckstore_next_id_lazy(conf->store, conf->job_id, id)
		    : sv_ckstore_next_id(conf->store, conf->job_id, id);
}

/* Overlapped steps 2 and 5 while w writes the record: the sink's prepare
 * (the producer's flush), then the offsets into the transaction, then the
 * wait for the write. err: what came before (then only the wait). */
static sv_error_t *overlap_steps(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
				 int64_t id, const sv_topic_offsets_t *offsets,
				 ck_writer_t *w, sv_error_t *err,
				 sv_ckpt_info_t *info, int64_t *us)
{
	if (!err) {
		sv_buf_t none;
		sv_buf_init(&none);
		err = sv_sink_txn_prepare(p->snk, id, &none);
		if (!err && none.len)
			err = ck_error(conf, NULL,
				       "the sink left state for recovery; its "
				       "record cannot be written beside the "
				       "prepare");
		sv_buf_release(&none);
	}
	step_done(info, SV_CKPT_STEP_FLUSH, us);
	if (!err)
		err = sv_sink_txn_offsets_topics(p->snk, id, offsets,
						 p->src2 ? 2 : 1);
	step_done(info, SV_CKPT_STEP_OFFSETS, us);
	sv_error_t *werr = ck_writer_join(w);
	step_done(info, SV_CKPT_STEP_WRITE_WAIT, us);
	info->step_us[SV_CKPT_STEP_WRITE] = w->us;
	if (w->build)
		info->step_us[SV_CKPT_STEP_SNAPSHOT] = w->build_us;
	if (!err)
		return werr;
	sv_error_destroy(werr);
	return err;
}

/* Checkpoint id, holding pl's operator states (deltas when delta, opbytes
 * bytes of them), is durable: the operators' changes count from here and
 * the chain in moves on (the job's at parallelism 1, a task's above). */
static void chain_moved(sv_ckpt_incr_t *in, sv_pipeline_t *pl, int64_t id,
			bool delta, int64_t opbytes)
{
	for (size_t i = 0; i < sv_pipeline_len(pl); i++) {
		sv_op_t *op = sv_pipeline_op(pl, i);
		if (op->ops->checkpointed)
			op->ops->checkpointed(op);
	}
	if (delta) {
		in->chain++;
		in->delta_bytes += opbytes;
		in->deltas++;
	} else {
		in->chain = 0;
		in->full_bytes = opbytes;
		in->delta_bytes = 0;
		in->fulls++;
	}
	in->prev = id;
}


static sv_error_t *take_tasks(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
			      int64_t wm, sv_ckpt_info_t *info);

/* build_record's arguments, for the writer's thread. */
typedef struct p1_build {
	const sv_ckpt_conf_t *conf;
	sv_ckpt_parts_t *p;
	const sv_partpos_t *pos, *pos2;
	size_t npos, npos2;
	int64_t id, wm, t0;
	const sv_buf_t *sink_state;
	ckrec_t *rec;
	Streamvisor__PartitionOffset *offs;
	Streamvisor__OperatorState *ops;
	sv_buf_t *opbufs;
	size_t nops;
} p1_build_t;

static sv_error_t *p1_build(void *opaque)
{
	p1_build_t *b = opaque;
	sv_error_t *err = build_record(
		b->conf, b->p, b->pos, b->npos, b->pos2, b->npos2, b->id, b->wm,
		b->sink_state, b->rec, b->offs, b->ops, b->opbufs, &b->nops);
	b->rec->started_at_ms = b->t0;
	b->rec->bytes += (int64_t)b->sink_state->len;
	return err;
}

sv_error_t *sv_ckpt_take(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
			 int64_t wm, sv_ckpt_info_t *info)
{
	if (p->ntasks || p->grouped)
		return take_tasks(conf, p, wm, info);
	int64_t t0 = sv_now_ms(), m0 = sv_mono_ms();
	int64_t us = sv_mono_us();
	sv_error_t *err = sv_ckpt_settle(conf); /* the last one's mark */
	if (err)
		return err;
	int64_t settle_us = sv_mono_us() - us;
	us += settle_us;
	int64_t id;
	if ((err = new_id(conf, p, &id)))
		return err;
	memset(info, 0, sizeof(*info));
	info->step_us[SV_CKPT_STEP_SETTLE] = settle_us;
	step_done(info, SV_CKPT_STEP_ID, &us);
	info->id = id;
	info->started_ms = t0;
	sv_obslog_add(conf->obs, conf->attempt, "checkpoint_started",
		      json_pack("{s:I}", "checkpoint_id", (json_int_t)id));
	sv_killpoint("before_prepare");
	sv_delaypoint("before_prepare");
	bool overlap = overlap_write(conf, p);

	/* 1. everything written so far: durable, not yet visible (when
	 * overlapped: after the snapshot, beside the write) */
	us = sv_mono_us();
	sv_buf_t sink_state;
	sv_buf_init(&sink_state);
	if (!overlap && conf->transactional)
		err = sv_sink_txn_prepare(p->snk, id, &sink_state);
	else if (!overlap)
		err = sv_sink_flush(p->snk, 30000);
	step_done(info, SV_CKPT_STEP_FLUSH, &us);

	/* 2. the record, PREPARED, synced */
	ckrec_t rec = STREAMVISOR__CHECKPOINT_RECORD__INIT;
	const sv_partpos_t *pos, *pos2 = NULL;
	size_t npos = sv_source_positions(p->src, &pos);
	size_t npos2 = p->src2 ? sv_source_positions(p->src2, &pos2) : 0;
	Streamvisor__PartitionOffset *offs = sv_calloc(
		npos + npos2 ? npos + npos2 : 1, sizeof(*offs));
	size_t nmax = sv_pipeline_len(p->pl);
	Streamvisor__OperatorState *ops = sv_calloc(nmax ? nmax : 1,
						    sizeof(*ops));
	sv_buf_t *opbufs = sv_calloc(nmax ? nmax : 1, sizeof(*opbufs));
	p1_build_t b = {.conf = conf,
			.p = p,
			.pos = pos,
			.pos2 = pos2,
			.npos = npos,
			.npos2 = npos2,
			.id = id,
			.wm = wm,
			.t0 = t0,
			.sink_state = &sink_state,
			.rec = &rec,
			.offs = offs,
			.ops = ops,
			.opbufs = opbufs};
	if (!err && !overlap) /* overlapped: on the writer's thread */
		err = p1_build(&b);
	step_done(info, SV_CKPT_STEP_SNAPSHOT, &us);
	size_t nall = npos + npos2;
	int32_t *parts = sv_calloc(nall ? nall : 1, sizeof(int32_t));
	int64_t *next = sv_calloc(nall ? nall : 1, sizeof(int64_t));
	for (size_t i = 0; i < nall; i++) {
		const sv_partpos_t *pp = i < npos ? &pos[i] : &pos2[i - npos];
		parts[i] = pp->partition;
		next[i] = pp->next_offset;
	}
	sv_topic_offsets_t toffs[2] = {
		{conf->topic, parts, next, npos},
		{p->topic2, parts + npos, next + npos, npos2},
	};
	if (overlap && !err) {
		ck_writer_t w = {.store = conf->store,
				 .rec = &rec,
				 .drop = drop_opbuf,
				 .drop_arg = opbufs,
				 .build = p1_build,
				 .build_arg = &b};
		ck_writer_start(&w);
		err = overlap_steps(conf, p, id, toffs, &w, err, info, &us);
	} else if (!err) {
		err = sv_ckstore_put_dropping(conf->store, &rec, drop_opbuf,
					      opbufs);
		step_done(info, SV_CKPT_STEP_WRITE, &us);
	}
	if (!err && conf->incr) {
		/* the state is durable: the next delta counts from here */
		int64_t opbytes = 0;
		for (size_t i = 0; i < rec.n_operators; i++)
			opbytes += (int64_t)rec.operators[i]->state.len;
		chain_moved(conf->incr, p->pl, id, rec.delta_of > 0, opbytes);
	}
	info->bytes = rec.bytes;
	free(rec.offsets);
	free(rec.operators);
	free(offs);
	free(ops);
	for (size_t i = 0; i < b.nops; i++)
		sv_buf_release(&opbufs[i]);
	free(opbufs);
	sv_buf_release(&sink_state);
	err = commit_steps(conf, p, id, wm, m0, toffs, NULL, 0, -1, overlap,
			   err, info);
	free(parts);
	free(next);
	return err;
}

/* Step 9: checkpoint id COMMITTED (its duration_ms), then retention (per
 * task when tasks is not NULL). */
static sv_error_t *mark_and_retain(sv_ckstore_t *st, const char *job_id,
				   int64_t id, int64_t duration_ms,
				   const int32_t *tasks, size_t ntasks,
				   int retain)
{
	sv_error_t *err = sv_ckstore_mark(
		st, job_id, id,
		STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED, duration_ms);
	if (!err)
		sv_killpoint("after_mark_committed");
	if (!err)
		err = tasks ? sv_ckstore_retain_tasks(st, job_id, tasks, ntasks,
						      retain)
			    : sv_ckstore_retain(st, job_id, retain);
	return err;
}

static void tail_run(sv_ckpt_tail_t *t)
{
	t->err = mark_and_retain(t->store, t->job_id, t->id, t->duration_ms,
				 t->tasks, t->ntasks, t->retain);
}

static void *tail_main(void *opaque)
{
	pthread_setname_np(pthread_self(), "sv-ckmark");
	tail_run(opaque);
	return NULL;
}

/* Step 9 of checkpoint id on conf->tail's thread (settled before). */
static void tail_start(const sv_ckpt_conf_t *conf, int64_t id,
		       int64_t duration_ms, const int32_t *tasks, size_t ntasks)
{
	sv_ckpt_tail_t *t = conf->tail;
	t->store = conf->store;
	t->job_id = conf->job_id;
	t->id = id;
	t->duration_ms = duration_ms;
	t->retain = conf->retain;
	t->tasks = NULL;
	t->ntasks = ntasks;
	if (tasks) {
		t->tasks = sv_calloc(ntasks ? ntasks : 1, sizeof(*t->tasks));
		memcpy(t->tasks, tasks, ntasks * sizeof(*t->tasks));
	}
	t->err = NULL;
	t->running = true;
	/* no thread to be had: written by the settle */
	t->threaded = pthread_create(&t->th, NULL, tail_main, t) == 0;
}

sv_error_t *sv_ckpt_settle(const sv_ckpt_conf_t *conf)
{
	sv_ckpt_tail_t *t = conf->tail;
	if (!t || !t->running)
		return NULL;
	if (t->threaded)
		pthread_join(t->th, NULL);
	else
		tail_run(t);
	t->running = false;
	free(t->tasks);
	t->tasks = NULL;
	sv_error_t *err = t->err;
	t->err = NULL;
	if (!err)
		return NULL;
	char what[96];
	snprintf(what, sizeof(what), "the COMMITTED mark of checkpoint %lld",
		 (long long)t->id);
	return ck_error(conf, err, what);
}

/* The positions of both inputs to the job's group (at-least-once). */
static sv_error_t *commit_sources(sv_ckpt_parts_t *p)
{
	sv_error_t *err = sv_source_commit(p->src);
	if (!err && p->src2)
		err = sv_source_commit(p->src2);
	return err;
}

/* STREAMVISOR_DELAY_AT=<point>_m<k>:<ms>: only member k's checkpoints
 * wait at point (a test makes one member slow, the others not). */
static void member_delaypoint(const char *point, int member)
{
	char name[64];
	snprintf(name, sizeof(name), "%s_m%d", point, member);
	sv_delaypoint(name);
}

/* STREAMVISOR_KILL_AT=<point>_m<k>:<n>: the kill at member k's n-th
 * arrival there (a test needs member k's transaction open with records). */
static void member_killpoint(const char *point, int member)
{
	char name[64];
	snprintf(name, sizeof(name), "%s_m%d", point, member);
	sv_killpoint(name);
}

/* Steps 3 to 5 of checkpoint id, shared by both take paths: the offsets
 * (offsets[0] the source's, offsets[1] a join input's when p->src2;
 * borrowed) into the transaction or committed
 * after the flush; the commit point (a sink that does not carry offsets,
 * the file sink, commits them to the group afterwards, for lag tooling
 * only: recovery reads positions from the store); marked committed;
 * retention (per task when tasks is not NULL); the observations (with the
 * member at parallelism > 1). err is what the earlier steps returned;
 * offsets_sent: the offsets went to the transaction beside the write. */
static sv_error_t *commit_steps(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
				int64_t id, int64_t wm, int64_t m0,
				const sv_topic_offsets_t *offsets,
				const int32_t *tasks, size_t ntasks, int member,
				bool offsets_sent, sv_error_t *err,
				sv_ckpt_info_t *info)
{
	if (!err)
		sv_killpoint("after_prepare");
	if (!err && member >= 0)
		member_delaypoint("after_prepare", member);

	/* 3. offsets (unless sent beside the write) */
	int64_t us = sv_mono_us();
	if (!err && !offsets_sent) {
		if (conf->transactional)
			err = sv_sink_txn_offsets_topics(p->snk, id, offsets,
							 p->src2 ? 2 : 1);
		else
			err = commit_sources(p);
	}
	step_done(info, SV_CKPT_STEP_OFFSETS, &us);
	if (!err)
		sv_killpoint("after_send_offsets");
	if (!err && member >= 0)
		member_killpoint("after_send_offsets", member);

	/* 4. the commit point */
	if (!err && conf->transactional)
		err = sv_sink_txn_commit(p->snk);
	if (!err && conf->transactional && !p->snk->ops->txn_offsets)
		err = commit_sources(p);
	step_done(info, SV_CKPT_STEP_COMMIT, &us);
	if (!err)
		sv_killpoint("after_commit");

	/* 5. mark committed, retention (on their own thread with a tail) */
	if (!err && conf->tail && !p->grouped && !serial_forced())
		tail_start(conf, id, sv_mono_ms() - m0, tasks, ntasks);
	else if (!err)
		err = mark_and_retain(conf->store, conf->job_id, id,
				      sv_mono_ms() - m0, tasks, ntasks,
				      conf->retain);
	step_done(info, SV_CKPT_STEP_MARK, &us);
	info->duration_ms = sv_mono_ms() - m0;
	json_t *o;
	if (err) {
		o = json_pack("{s:I, s:s, s:s}", "checkpoint_id",
			      (json_int_t)id, "category",
			      sv_errcat_name(err->category), "message",
			      err->message);
		if (member >= 0)
			json_object_set_new(o, "member", json_integer(member));
		sv_obslog_add(conf->obs, conf->attempt, "checkpoint_failed", o);
		return sv_error_set_job(err, conf->job_id, conf->attempt);
	}
	static const char *const step_names[SV_CKPT_STEPS] = {
		[SV_CKPT_STEP_SETTLE] = "settle",
		[SV_CKPT_STEP_ID] = "id",
		[SV_CKPT_STEP_FLUSH] = "flush",
		[SV_CKPT_STEP_SNAPSHOT] = "snapshot",
		[SV_CKPT_STEP_WRITE] = "write",
		[SV_CKPT_STEP_WRITE_WAIT] = "write_wait",
		[SV_CKPT_STEP_OFFSETS] = "offsets",
		[SV_CKPT_STEP_COMMIT] = "commit",
		[SV_CKPT_STEP_MARK] = "mark",
	};
	json_t *steps = json_object();
	for (int k = 0; k < SV_CKPT_STEPS; k++)
		json_object_set_new(steps, step_names[k],
				    json_integer((json_int_t)info->step_us[k]));
	o = json_pack("{s:I, s:I, s:I, s:I, s:o}", "checkpoint_id",
		      (json_int_t)id, "duration_ms",
		      (json_int_t)info->duration_ms, "bytes",
		      (json_int_t)info->bytes, "watermark_ms", (json_int_t)wm,
		      "steps_us", steps);
	if (member >= 0)
		json_object_set_new(o, "member", json_integer(member));
	sv_obslog_add(conf->obs, conf->attempt, "checkpoint_completed", o);
	o = json_pack("{s:I, s:s, s:s}", "checkpoint_id", (json_int_t)id,
		      "kind",
		      !conf->transactional               ? "offsets"
			      : p->snk->ops->txn_offsets ? "transaction"
							 : "file",
		      "outcome", "committed");
	if (member >= 0)
		json_object_set_new(o, "member", json_integer(member));
	sv_obslog_add(conf->obs, conf->attempt, "sink_commit", o);
	if (conf->transactional)
		err = sv_sink_txn_begin(p->snk);
	return err;
}

/* ---- take, parallelism > 1 ---- */

/* The snapshot of one task: its partition's position and watermark and its
 * operators' state, packed inline; delta_of > 0: the operators that can
 * write only what changed since that checkpoint of the task (rec->delta_of
 * names it). The record points into *off, ops and
 * opbufs (sized for the pipeline), which the caller frees. */
static sv_error_t *build_task(
	const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p, sv_ckpt_task_t *t,
	const sv_partpos_t *pos, const sv_partpos_t *pos2, int64_t id,
	int64_t delta_of, ckrec_t *rec, Streamvisor__PartitionOffset *off,
	Streamvisor__PartitionOffset **offp, Streamvisor__OperatorState *ops,
	Streamvisor__OperatorState **opp, sv_buf_t *opbufs, size_t *nops_out)
{
	streamvisor__checkpoint_record__init(rec);
	rec->id = id;
	rec->job_id = (char *)conf->job_id;
	rec->attempt = conf->attempt;
	rec->plan_id = (char *)conf->plan_id;
	streamvisor__partition_offset__init(off);
	off->topic = (char *)conf->topic;
	off->partition = t->partition;
	off->next_offset = pos ? pos->next_offset : -1;
	off->watermark_ms = sv_watermarks_partition(t->wm, t->partition);
	offp[0] = off;
	rec->offsets = offp;
	rec->n_offsets = 1;
	rec->watermark_ms = off->watermark_ms;
	if (p->src2) { /* the join input's partition of the same number */
		Streamvisor__PartitionOffset *o2 = off + 1;
		streamvisor__partition_offset__init(o2);
		o2->topic = (char *)p->topic2;
		o2->partition = t->partition;
		o2->next_offset = pos2 ? pos2->next_offset : -1;
		o2->watermark_ms = t->wm2
			? sv_watermarks_partition(t->wm2, t->partition)
			: SV_WATERMARK_NONE;
		o2->input = 1;
		offp[1] = o2;
		rec->n_offsets = 2;
	}
	size_t nops;
	rec->delta_of = 0;
	sv_error_t *err = snapshot_ops(conf, t->pl, delta_of, rec, ops, opbufs,
				       &nops);
	*nops_out = nops;
	if (err)
		return err;
	for (size_t i = 0; i < nops; i++)
		opp[i] = &ops[i];
	rec->n_operators = nops;
	rec->operators = opp;
	return NULL;
}

/* Incremental per-task snapshots (docs/checkpoints.md): the checkpoint a
 * task's next snapshot may be a delta of, or 0 for a full one. The same
 * rule as parallelism 1, per task: a full snapshot after full_every - 1
 * deltas or once the deltas add up to more bytes than the full one; in
 * distributed mode also after p->task_deltas_max deltas (the state
 * topic's manifest names the chain). Off when conf->incr is. The base is
 * always a committed checkpoint of this attempt (task_committed sets it
 * only after the commit). */
static int64_t task_delta_base(const sv_ckpt_conf_t *conf,
			       const sv_ckpt_parts_t *p,
			       const sv_ckpt_task_t *t)
{
	const sv_ckpt_incr_t *in = conf->incr, *ti = &t->incr;
	if (!in || in->full_every <= 1)
		return 0;
	if (ti->prev <= 0 || ti->chain + 1 >= in->full_every ||
	    ti->delta_bytes > ti->full_bytes ||
	    (p->task_deltas_max > 0 && ti->chain >= p->task_deltas_max))
		return 0;
	return ti->prev;
}

/* Checkpoint id, holding task t's record (its operator states deltas when
 * delta, opbytes bytes of them), committed: the operators' changes count
 * from here, and the task's chain moves on. */
static void task_committed(const sv_ckpt_conf_t *conf, sv_ckpt_task_t *t,
			   int64_t id, bool delta, int64_t opbytes)
{
	sv_ckpt_incr_t *in = conf->incr;
	if (!in || in->full_every <= 1)
		return;
	chain_moved(&t->incr, t->pl, id, delta, opbytes);
	if (delta)
		in->deltas++;
	else
		in->fulls++;
}

static const sv_partpos_t *find_pos(const sv_partpos_t *pos, size_t n,
				    int32_t partition)
{
	for (size_t i = 0; i < n; i++)
		if (pos[i].partition == partition)
			return &pos[i];
	return NULL;
}

/* One member's checkpoint: the same steps as sv_ckpt_take over the
 * member's own partitions and transaction; the member record and every
 * task's snapshot are written in one batch. */
static sv_error_t *take_tasks(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
			      int64_t wm, sv_ckpt_info_t *info)
{
	int64_t t0 = sv_now_ms(), m0 = sv_mono_ms();
	int64_t us = sv_mono_us();
	sv_error_t *err = sv_ckpt_settle(conf); /* the last one's mark */
	if (err)
		return err;
	int64_t settle_us = sv_mono_us() - us;
	us += settle_us;
	int64_t id;
	if ((err = new_id(conf, p, &id)))
		return err;
	memset(info, 0, sizeof(*info));
	info->step_us[SV_CKPT_STEP_SETTLE] = settle_us;
	step_done(info, SV_CKPT_STEP_ID, &us);
	info->id = id;
	info->started_ms = t0;
	sv_obslog_add(conf->obs, conf->attempt, "checkpoint_started",
		      json_pack("{s:I, s:i}", "checkpoint_id", (json_int_t)id,
				"member", p->member));
	sv_killpoint("before_prepare");
	sv_delaypoint("before_prepare");

	bool overlap = overlap_write(conf, p);
	us = sv_mono_us();
	sv_buf_t sink_state;
	sv_buf_init(&sink_state);
	if (!overlap && conf->transactional)
		err = sv_sink_txn_prepare(p->snk, id, &sink_state);
	else if (!overlap)
		err = sv_sink_flush(p->snk, 30000);
	step_done(info, SV_CKPT_STEP_FLUSH, &us);

	const sv_partpos_t *pos, *pos2 = NULL;
	size_t npos = sv_source_positions(p->src, &pos);
	size_t npos2 = p->src2 ? sv_source_positions(p->src2, &pos2) : 0;
	size_t nt = p->ntasks;
	size_t nin = p->src2 ? 2 : 1; /* inputs */
	ckrec_t rec = STREAMVISOR__CHECKPOINT_RECORD__INIT;
	rec.id = id;
	rec.job_id = (char *)conf->job_id;
	rec.attempt = conf->attempt;
	rec.plan_id = (char *)conf->plan_id;
	rec.status = STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED;
	rec.watermark_ms = wm;
	rec.parallelism = p->parallelism;
	rec.member = p->member;
	rec.started_at_ms = t0;
	rec.sink_state.data = (uint8_t *)sink_state.data;
	rec.sink_state.len = sink_state.len;
	rec.bytes = (int64_t)sink_state.len;
	Streamvisor__PartitionOffset *offs = sv_calloc(nt * nin, sizeof(*offs));
	Streamvisor__PartitionOffset **offp = sv_calloc(nt * nin,
							sizeof(*offp));
	Streamvisor__PartitionOffset *toff = sv_calloc(nt * 2, sizeof(*toff));
	Streamvisor__PartitionOffset **toffp = sv_calloc(nt * 2,
							 sizeof(*toffp));
	ckrec_t *trec = sv_calloc(nt, sizeof(*trec));
	const ckrec_t **trecp = sv_calloc(nt, sizeof(*trecp));
	Streamvisor__OperatorState **ops = sv_calloc(nt, sizeof(*ops));
	Streamvisor__OperatorState ***opp = sv_calloc(nt, sizeof(*opp));
	sv_buf_t **opbufs = sv_calloc(nt, sizeof(*opbufs));
	size_t *nops = sv_calloc(nt, sizeof(*nops));
	int32_t *parts = sv_calloc(nt * nin, sizeof(int32_t));
	int64_t *next = sv_calloc(nt * nin, sizeof(int64_t));
	bool *tdelta = sv_calloc(nt ? nt : 1, sizeof(*tdelta));
	int64_t *tbytes = sv_calloc(nt ? nt : 1, sizeof(*tbytes));
	for (size_t i = 0; i < nt; i++) {
		sv_ckpt_task_t *t = &p->tasks[i];
		const sv_partpos_t *tp = find_pos(pos, npos, t->partition);
		const sv_partpos_t *tp2 = pos2
			? find_pos(pos2, npos2, t->partition)
			: NULL;
		size_t nmax = sv_pipeline_len(t->pl);
		ops[i] = sv_calloc(nmax ? nmax : 1, sizeof(**ops));
		opp[i] = sv_calloc(nmax ? nmax : 1, sizeof(**opp));
		opbufs[i] = sv_calloc(nmax ? nmax : 1, sizeof(**opbufs));
		if (!err)
			err = build_task(conf, p, t, tp, tp2, id,
					 task_delta_base(conf, p, t), &trec[i],
					 &toff[2 * i], &toffp[2 * i], ops[i],
					 opp[i], opbufs[i], &nops[i]);
		trecp[i] = &trec[i];
		tdelta[i] = trec[i].delta_of > 0;
		for (size_t j = 0; j < trec[i].n_operators; j++)
			tbytes[i] += (int64_t)trec[i].operators[j]->state.len;
		rec.bytes += trec[i].bytes;
		streamvisor__partition_offset__init(&offs[i]);
		offs[i].topic = (char *)conf->topic;
		offs[i].partition = t->partition;
		offs[i].next_offset = tp ? tp->next_offset : -1;
		offs[i].watermark_ms = toff[2 * i].watermark_ms;
		offp[i] = &offs[i];
		parts[i] = t->partition;
		next[i] = offs[i].next_offset;
		if (nin == 2) { /* the join input's, after the source's */
			Streamvisor__PartitionOffset *o = &offs[nt + i];
			*o = toff[2 * i + 1];
			offp[nt + i] = o;
			parts[nt + i] = t->partition;
			next[nt + i] = o->next_offset;
		}
	}
	rec.offsets = offp;
	rec.n_offsets = nt * nin;
	step_done(info, SV_CKPT_STEP_SNAPSHOT, &us);
	sv_topic_offsets_t toffs[2] = {
		{conf->topic, parts, next, nt},
		{p->topic2, parts + nt, next + nt, nin == 2 ? nt : 0},
	};
	if (overlap && !err) {
		ck_writer_t w = {.store = conf->store,
				 .rec = &rec,
				 .trecs = trecp,
				 .ntrecs = nt,
				 .drop = drop_task_opbuf,
				 .drop_arg = opbufs};
		ck_writer_start(&w);
		err = overlap_steps(conf, p, id, toffs, &w, err, info, &us);
	} else if (!err) {
		/* on_tasks reads the states after the write (distributed
		 * mode's state topic): they stay until then */
		err = sv_ckstore_put_tasks_dropping(
			conf->store, &rec, trecp, nt,
			p->on_tasks ? NULL : drop_task_opbuf, opbufs);
		if (!err && p->on_tasks)
			err = p->on_tasks(p->tasks_opaque, id, trecp, nt);
		step_done(info, SV_CKPT_STEP_WRITE, &us);
	}
	info->bytes = rec.bytes;
	for (size_t i = 0; i < nt; i++) {
		for (size_t j = 0; j < nops[i]; j++)
			sv_buf_release(&opbufs[i][j]);
		free(opbufs[i]);
		free(ops[i]);
		free(opp[i]);
	}
	free(opbufs);
	free(ops);
	free(opp);
	free(nops);
	free(trec);
	free(trecp);
	free(toff);
	free(toffp);
	free(offs);
	free(offp);
	sv_buf_release(&sink_state);
	int32_t *tp = sv_calloc(nt ? nt : 1, sizeof(*tp));
	for (size_t i = 0; i < nt; i++)
		tp[i] = p->tasks[i].partition;
	err = commit_steps(conf, p, id, wm, m0, toffs, tp, nt, p->member,
			   overlap, err, info);
	for (size_t i = 0; !err && i < nt; i++)
		task_committed(conf, &p->tasks[i], id, tdelta[i], tbytes[i]);
	free(tdelta);
	free(tbytes);
	free(tp);
	free(parts);
	free(next);
	return err;
}

/* ---- recover ---- */

/* The operator state of pipeline index in rec, or NULL. */
static const Streamvisor__OperatorState *op_state(const ckrec_t *rec,
						  uint32_t index)
{
	for (size_t i = 0; i < rec->n_operators; i++)
		if (rec->operators[i]->index == index)
			return rec->operators[i];
	return NULL;
}

static sv_error_t *task_base(const sv_ckpt_conf_t *conf, int32_t part,
			     const ckrec_t *rec, ckrec_t **out);

/* Restore op from os of checkpoint id: a full snapshot directly; a delta
 * on top of its base, restored first (the chain of delta_of down to a
 * full snapshot, oldest applied first). part: -1 a parallelism-1 record
 * (bases under ck/), >= 0 a task record of that partition (bases are the
 * partition's task records, each of a committed checkpoint), -2 a record
 * that must be whole (the full link of a state topic chain). */
static sv_error_t *restore_op(const sv_ckpt_conf_t *conf, sv_op_t *op,
			      const ckrec_t *rec,
			      const Streamvisor__OperatorState *os,
			      int32_t part, int depth, int *deepest)
{
	if (!os->delta) {
		if (deepest && depth > *deepest)
			*deepest = depth;
		return op->ops->restore(op, (const char *)os->state.data,
					os->state.len);
	}
	if (!op->ops->restore_delta || rec->delta_of <= 0 ||
	    rec->delta_of >= rec->id || depth > 100000 || part == -2)
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "checkpoint %lld holds a state delta of "
				    "operator %u without a usable base "
				    "(delta_of %lld)",
				    (long long)rec->id, os->index,
				    (long long)rec->delta_of);
	ckrec_t *base = NULL;
	sv_error_t *err = part >= 0 ? task_base(conf, part, rec, &base)
				    : sv_ckstore_get(conf->store, conf->job_id,
						     rec->delta_of, &base);
	const Streamvisor__OperatorState *bos = err || !base
		? NULL
		: op_state(base, os->index);
	if (!err && !bos)
		err = sv_error_new(
			SV_ERR_CHECKPOINT,
			"checkpoint %lld: the base %lld of its state "
			"delta of operator %u is missing",
			(long long)rec->id, (long long)rec->delta_of,
			os->index);
	if (!err)
		err = restore_op(conf, op, base, bos, part, depth + 1, deepest);
	sv_ckstore_free_record(base);
	if (!err)
		err = op->ops->restore_delta(op, (const char *)os->state.data,
					     os->state.len);
	return err;
}

/* The base of task record rec (partition part): the partition's task
 * record of checkpoint rec->delta_of, whose member record must say
 * COMMITTED (a delta is only ever taken on a committed checkpoint, so
 * anything else is damage, not a choice). NULL *out when it is missing
 * (the caller says so). */
static sv_error_t *task_base(const sv_ckpt_conf_t *conf, int32_t part,
			     const ckrec_t *rec, ckrec_t **out)
{
	*out = NULL;
	ckrec_t *ck = NULL;
	sv_error_t *err = sv_ckstore_get(conf->store, conf->job_id,
					 rec->delta_of, &ck);
	if (!err && ck &&
	    ck->status != STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED)
		err = sv_error_new(SV_ERR_CHECKPOINT,
				   "checkpoint %lld: the base %lld of "
				   "partition %d's state delta did not commit",
				   (long long)rec->id, (long long)rec->delta_of,
				   part);
	else if (!err && ck && strcmp(ck->plan_id, conf->plan_id))
		err = sv_error_new(SV_ERR_CHECKPOINT,
				   "checkpoint %lld: the base %lld of "
				   "partition %d's state delta belongs to "
				   "plan %s",
				   (long long)rec->id, (long long)rec->delta_of,
				   part, ck->plan_id);
	sv_ckstore_free_record(ck);
	if (!err)
		err = sv_ckstore_get_task(conf->store, conf->job_id, part,
					  rec->delta_of, out);
	return err;
}

/* The operator of pl that state os of checkpoint rec belongs to (same
 * index and kind, able to restore), or a checkpoint error. */
static sv_error_t *plan_op(sv_pipeline_t *pl, const ckrec_t *rec,
			   const Streamvisor__OperatorState *os, sv_op_t **out)
{
	sv_op_t *op = os->index < sv_pipeline_len(pl)
		? sv_pipeline_op(pl, os->index)
		: NULL;
	*out = op;
	if (!op || !op->ops->restore || strcmp(op->ops->name, os->kind))
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "checkpoint %lld holds state of operator "
				    "%u (%s) that the plan does not have",
				    (long long)rec->id, os->index, os->kind);
	return NULL;
}

static sv_error_t *restore_ops(const sv_ckpt_conf_t *conf, sv_pipeline_t *pl,
			       const ckrec_t *rec, int32_t part, int *deepest)
{
	if (conf->incr) { /* the next checkpoint is a full one */
		conf->incr->prev = 0;
		conf->incr->chain = 0;
	}
	for (size_t i = 0; !conf->ignore_state && i < rec->n_operators; i++) {
		const Streamvisor__OperatorState *os = rec->operators[i];
		sv_op_t *op;
		sv_error_t *err = plan_op(pl, rec, os, &op);
		if (err)
			return sv_error_set_job(err, conf->job_id,
						conf->attempt);
		err = restore_op(conf, op, rec, os, part, 0, deepest);
		if (err)
			return ck_error(conf, err,
					"cannot restore an operator");
	}
	return NULL;
}

/* Whether rec is a task record of t's partition and of the job's plan. */
static sv_error_t *task_rec_check(const sv_ckpt_conf_t *conf,
				  const sv_ckpt_task_t *t, const ckrec_t *rec)
{
	if (!rec || rec->n_offsets < 1 || rec->offsets[0]->input != 0 ||
	    rec->offsets[0]->partition != t->partition)
		return sv_error_set_job(
			sv_error_new(SV_ERR_CHECKPOINT,
				     "the snapshot of partition %d is not a "
				     "task record of that partition",
				     t->partition),
			conf->job_id, conf->attempt);
	if (strcmp(rec->plan_id, conf->plan_id))
		return sv_error_set_job(
			sv_error_new(SV_ERR_CHECKPOINT,
				     "the snapshot of partition %d belongs to "
				     "plan %s, not %s",
				     t->partition, rec->plan_id, conf->plan_id),
			conf->job_id, conf->attempt);
	return NULL;
}

static void task_restored_wm(sv_ckpt_task_t *t, const ckrec_t *rec)
{
	int64_t pwm = rec->offsets[0]->watermark_ms;
	sv_watermarks_set(t->wm, t->partition, pwm, sv_mono_ms());
	if (pwm != SV_WATERMARK_NONE)
		sv_watermarks_set_current(t->wm, pwm);
}

sv_error_t *sv_ckpt_restore_task(const sv_ckpt_conf_t *conf, sv_ckpt_task_t *t,
				 const ckrec_t *rec, int *deltas)
{
	int deepest = 0;
	sv_error_t *err = task_rec_check(conf, t, rec);
	/* a delta follows its chain through the partition's task records
	 * in the store (the local cache's own checkpoints) */
	if (!err)
		err = restore_ops(conf, t->pl, rec, t->partition, &deepest);
	if (!err)
		task_restored_wm(t, rec);
	if (deltas)
		*deltas = err ? 0 : deepest;
	return err;
}

/* Delta record rec (link i of a chain) onto the operators: each state
 * replaces (delta false) or updates (delta true) its operator. */
static sv_error_t *apply_delta(const sv_ckpt_conf_t *conf, sv_pipeline_t *pl,
			       const ckrec_t *rec)
{
	for (size_t i = 0; !conf->ignore_state && i < rec->n_operators; i++) {
		const Streamvisor__OperatorState *os = rec->operators[i];
		sv_op_t *op;
		sv_error_t *err = plan_op(pl, rec, os, &op);
		if (err)
			return err;
		if (!os->delta)
			err = op->ops->restore(op, (const char *)os->state.data,
					       os->state.len);
		else if (!op->ops->restore_delta)
			err = sv_error_new(SV_ERR_CHECKPOINT,
					   "checkpoint %lld holds a state "
					   "delta of operator %u (%s), which "
					   "cannot apply one",
					   (long long)rec->id, os->index,
					   os->kind);
		else
			err = op->ops->restore_delta(
				op, (const char *)os->state.data,
				os->state.len);
		if (err)
			return err;
	}
	return NULL;
}

sv_error_t *sv_ckpt_restore_task_chain(const sv_ckpt_conf_t *conf,
				       sv_ckpt_task_t *t,
				       const ckrec_t *const *recs, size_t n)
{
	sv_error_t *err = n ? NULL
			    : sv_error_new(SV_ERR_CHECKPOINT,
					   "the snapshot of partition %d is "
					   "an empty chain",
					   t->partition);
	for (size_t i = 0; !err && i < n; i++) {
		const ckrec_t *rec = recs[i];
		if ((err = task_rec_check(conf, t, rec)))
			break;
		bool full = rec->delta_of == 0;
		for (size_t k = 0; full && k < rec->n_operators; k++)
			full = !rec->operators[k]->delta;
		if (i == 0 && !full)
			err = sv_error_new(SV_ERR_CHECKPOINT,
					   "partition %d: the snapshot chain "
					   "starts with checkpoint %lld, a "
					   "delta on %lld, not a full snapshot",
					   t->partition, (long long)rec->id,
					   (long long)rec->delta_of);
		else if (i > 0 && rec->delta_of != recs[i - 1]->id)
			err = sv_error_new(SV_ERR_CHECKPOINT,
					   "partition %d: link %zu of the "
					   "snapshot chain (checkpoint %lld) "
					   "is a delta on %lld, not on the "
					   "link before it (%lld)",
					   t->partition, i, (long long)rec->id,
					   (long long)rec->delta_of,
					   (long long)recs[i - 1]->id);
		else if (i == 0)
			err = restore_ops(conf, t->pl, rec, -2, NULL);
		else
			err = apply_delta(conf, t->pl, rec);
		if (err)
			err = ck_error(conf, err,
				       "cannot restore a task's snapshot "
				       "chain");
	}
	if (!err)
		task_restored_wm(t, recs[n - 1]);
	return err;
}

static bool stateful(sv_pipeline_t *pl)
{
	for (size_t i = 0; i < sv_pipeline_len(pl); i++)
		if (sv_pipeline_op(pl, i)->ops->snapshot)
			return true;
	return false;
}

/* The newest record was taken at another kind of parallelism (1 vs > 1):
 * positions carry over through the group's committed offsets, where the
 * source opened; operator state is laid out differently and cannot. */
static sv_error_t *regroup_refused(const sv_ckpt_conf_t *conf,
				   const ckrec_t *rec, int now, bool has_state)
{
	int was = rec->parallelism > 1 ? rec->parallelism : 1;
	if (!has_state || conf->ignore_state) {
		sv_logctx_t lc = {conf->job_id, conf->attempt};
		sv_log(&lc, SV_LOG_INFO, "checkpoint",
		       "checkpoint %lld was taken at parallelism %d, this "
		       "attempt runs %d: continuing from the group's committed "
		       "offsets, without operator state",
		       (long long)rec->id, was, now);
		return NULL;
	}
	return sv_error_set_job(
		sv_error_new(SV_ERR_CHECKPOINT,
			     "checkpoint %lld was taken at parallelism %d and "
			     "this attempt runs %d: state at parallelism 1 is "
			     "one snapshot over all partitions, at more it is "
			     "one per partition, and one cannot become the "
			     "other (restart with ignore_state, or keep both "
			     "sides of the change above 1)",
			     (long long)rec->id, was, now),
		conf->job_id, conf->attempt);
}

/* A task snapshot's join-input offset (input 1): seek the join's source
 * to it and set its tracker. A snapshot without one (taken before the job
 * had its join wired) leaves the join input where the group's offsets
 * put it. */
static sv_error_t *restore_right_task(const sv_ckpt_conf_t *conf,
				      sv_ckpt_parts_t *p, sv_ckpt_task_t *t,
				      const ckrec_t *tr)
{
	for (size_t k = 0; k < tr->n_offsets; k++) {
		const Streamvisor__PartitionOffset *o = tr->offsets[k];
		if (o->input != 1)
			continue;
		if (!conf->ignore_state && t->wm2) {
			sv_watermarks_set(t->wm2, o->partition, o->watermark_ms,
					  sv_mono_ms());
			if (o->watermark_ms != SV_WATERMARK_NONE)
				sv_watermarks_set_current(t->wm2,
							  o->watermark_ms);
		}
		if (o->next_offset < 0)
			return NULL;
		sv_partpos_t pos = {o->partition, o->next_offset, -1};
		return sv_source_seek(p->src2, &pos, 1);
	}
	return NULL;
}

/* Parallelism > 1: each task from the newest usable snapshot of its own
 * partition. A PREPARED member checkpoint is decided by the tag of the
 * partition's committed offset (its transaction carried it), so
 * partitions of one old member agree, and a regrouped partition is
 * decided the same way wherever it lands. */
static sv_error_t *recover_tasks(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
				 int64_t *restored, int64_t *wm_out)
{
	ckrec_t *latest = NULL;
	/* the record that decides the layout: the chosen one (restart from a
	 * checkpoint), else the newest */
	sv_error_t *err = conf->restore_from >= 0
		? sv_ckstore_get(conf->store, conf->job_id, conf->restore_from,
				 &latest)
		: sv_ckstore_latest(conf->store, conf->job_id, &latest);
	if (err)
		return err;
	if (latest && latest->parallelism <= 1 &&
	    latest->status != STREAMVISOR__CHECKPOINT_RECORD__STATUS__ABORTED) {
		err = regroup_refused(conf, latest, p->parallelism,
				      p->ntasks && stateful(p->tasks[0].pl));
		sv_ckstore_free_record(latest);
		return err;
	}
	sv_ckstore_free_record(latest);
	sv_partpos_t *seek = sv_calloc(p->ntasks, sizeof(*seek));
	size_t nseek = 0;
	int64_t now = sv_mono_ms();
	for (size_t i = 0; i < p->ntasks && !err; i++) {
		sv_ckpt_task_t *t = &p->tasks[i];
		int64_t *ids;
		size_t n;
		if ((err = sv_ckstore_task_ids(conf->store, conf->job_id,
					       t->partition, &ids, &n))) {
			free(ids);
			break;
		}
		int64_t chosen = -1;
		const char *decision = "committed";
		for (size_t j = 0; j < n && chosen < 0 && !err; j++) {
			int64_t id = ids[j];
			if (conf->restore_from >= 0 && id > conf->restore_from)
				continue;
			ckrec_t *ck;
			if ((err = sv_ckstore_get(conf->store, conf->job_id, id,
						  &ck)) ||
			    !ck)
				continue;
			if (strcmp(ck->plan_id, conf->plan_id)) {
				err = sv_error_new(SV_ERR_CHECKPOINT,
						   "checkpoint %lld belongs to "
						   "plan %s, not %s",
						   (long long)id, ck->plan_id,
						   conf->plan_id);
			} else if (ck->status ==
				   STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED) {
				chosen = id;
			} else if (ck->status ==
					   STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED &&
				   conf->restore_from < 0) {
				bool done;
				if (!conf->transactional) {
					done = true;
					decision = "prepared; its output was "
						   "flushed before it";
				} else {
					int64_t tag =
						sv_source_committed_checkpoint_of(
							p->src, t->partition);
					done = tag == id;
					decision = "prepared; its transaction "
						   "committed (the partition's "
						   "offsets carry it)";
				}
				err = sv_ckstore_mark(
					conf->store, conf->job_id, id,
					done ? STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED
					     : STREAMVISOR__CHECKPOINT_RECORD__STATUS__ABORTED,
					-1);
				if (done)
					chosen = id;
			}
			sv_ckstore_free_record(ck);
		}
		free(ids);
		if (err || chosen < 0)
			continue;
		ckrec_t *tr;
		if ((err = sv_ckstore_get_task(conf->store, conf->job_id,
					       t->partition, chosen, &tr)))
			break;
		if (!tr || tr->n_offsets < 1 || tr->offsets[0]->input != 0) {
			err = sv_error_new(SV_ERR_CHECKPOINT,
					   "the snapshot of partition %d in "
					   "checkpoint %lld is missing",
					   t->partition, (long long)chosen);
			sv_ckstore_free_record(tr);
			break;
		}
		t->incr = (sv_ckpt_incr_t){0}; /* its next snapshot: full */
		err = restore_ops(conf, t->pl, tr, t->partition, NULL);
		if (!err && !conf->ignore_state) {
			int64_t pwm = tr->offsets[0]->watermark_ms;
			sv_watermarks_set(t->wm, t->partition, pwm, now);
			if (pwm != SV_WATERMARK_NONE)
				sv_watermarks_set_current(t->wm, pwm);
		}
		seek[nseek].partition = t->partition;
		seek[nseek].next_offset = tr->offsets[0]->next_offset;
		seek[nseek].end_offset = -1;
		nseek++;
		if (!err && p->src2 &&
		    (err = restore_right_task(conf, p, t, tr)))
			err = ck_error(conf, err,
				       "cannot seek the join input to the "
				       "checkpoint's positions");
		int64_t delta_of = tr->delta_of;
		sv_ckstore_free_record(tr);
		if (chosen > *restored)
			*restored = chosen;
		char how[64] = "";
		if (delta_of > 0) /* the chain was followed down to a full */
			snprintf(how, sizeof(how),
				 "; its state a delta on %lld",
				 (long long)delta_of);
		sv_logctx_t plc = {conf->job_id, conf->attempt};
		sv_log(&plc, SV_LOG_INFO, "checkpoint",
		       "member %d, partition %d: restored checkpoint %lld "
		       "(%s%s)",
		       p->member, t->partition, (long long)chosen, decision,
		       how);
		json_t *ro = json_pack("{s:I, s:i, s:i, s:s}", "checkpoint_id",
				       (json_int_t)chosen, "partition",
				       t->partition, "member", p->member,
				       "decision", decision);
		if (delta_of > 0)
			json_object_set_new(ro, "delta_of",
					    json_integer((json_int_t)delta_of));
		sv_obslog_add(conf->obs, conf->attempt, "checkpoint_restored",
			      ro);
	}
	if (!err && nseek && (err = sv_source_seek(p->src, seek, nseek)))
		err = ck_error(conf, err,
			       "cannot seek the source to the "
			       "checkpoint's positions");
	free(seek);
	(void)wm_out;
	if (!err && *restored >= 0) {
		sv_logctx_t lc = {conf->job_id, conf->attempt};
		sv_log(&lc, SV_LOG_INFO, "checkpoint",
		       "member %d restored %zu of %zu partitions (newest "
		       "checkpoint %lld)",
		       p->member, nseek, p->ntasks, (long long)*restored);
	}
	return err ? sv_error_set_job(err, conf->job_id, conf->attempt) : NULL;
}

static sv_error_t *restore(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
			   const ckrec_t *rec, int64_t *wm_out)
{
	sv_error_t *oerr = restore_ops(conf, p->pl, rec, -1, NULL);
	if (oerr)
		return oerr;
	int64_t now = sv_mono_ms();
	sv_partpos_t *pos = sv_calloc(rec->n_offsets ? rec->n_offsets : 1,
				      sizeof(*pos));
	sv_partpos_t *pos2 = sv_calloc(rec->n_offsets ? rec->n_offsets : 1,
				       sizeof(*pos2));
	size_t n = 0, n2 = 0;
	int64_t wm2 = INT64_MAX;
	for (size_t i = 0; i < rec->n_offsets; i++) {
		const Streamvisor__PartitionOffset *o = rec->offsets[i];
		bool right = o->input == 1;
		if (right && !p->src2)
			continue;
		sv_partpos_t *pp = right ? &pos2[n2++] : &pos[n++];
		pp->partition = o->partition;
		pp->next_offset = o->next_offset;
		pp->end_offset = -1;
		if (!conf->ignore_state)
			sv_watermarks_set(right ? p->wm2 : p->wm, pp->partition,
					  o->watermark_ms, now);
		if (right && o->watermark_ms < wm2)
			wm2 = o->watermark_ms;
	}
	if (!conf->ignore_state) {
		sv_watermarks_set_current(p->wm, rec->watermark_ms);
		*wm_out = rec->watermark_ms;
		/* the join input's combined watermark: the minimum of its
		 * partitions' (idle ones are not told apart here; it only
		 * moves forward from there) */
		if (p->wm2 && n2 && wm2 != SV_WATERMARK_NONE)
			sv_watermarks_set_current(p->wm2, wm2);
	}
	sv_error_t *err = sv_source_seek(p->src, pos, n);
	if (!err && p->src2 && n2)
		err = sv_source_seek(p->src2, pos2, n2);
	free(pos);
	free(pos2);
	if (err)
		return ck_error(conf, err,
				"cannot seek the source to the "
				"checkpoint's positions");
	return NULL;
}

sv_error_t *sv_ckpt_recover(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
			    int64_t *restored, int64_t *wm_out)
{
	*restored = -1;
	*wm_out = SV_WATERMARK_NONE;
	if (p->ntasks)
		return recover_tasks(conf, p, restored, wm_out);
	ckrec_t *rec = NULL;
	sv_error_t *err;
	if (conf->restore_from >= 0) {
		/* restart from a chosen checkpoint: it must have committed */
		err = sv_ckstore_get(conf->store, conf->job_id,
				     conf->restore_from, &rec);
		if (!err && rec && rec->parallelism > 1) {
			err = regroup_refused(conf, rec, 1, stateful(p->pl));
			sv_ckstore_free_record(rec);
			return err;
		}
		if (!err &&
		    (!rec ||
		     rec->status !=
			     STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED)) {
			err = sv_error_new(SV_ERR_CHECKPOINT,
					   "checkpoint %lld of job "
					   "'%s' %s",
					   (long long)conf->restore_from,
					   conf->job_id,
					   rec ? "did not commit"
					       : "does not exist (or was "
						 "removed by retention)");
		}
		if (!err)
			err = restore(conf, p, rec, wm_out);
		if (!err)
			*restored = rec->id;
		sv_ckstore_free_record(rec);
		return err ? sv_error_set_job(err, conf->job_id, conf->attempt)
			   : NULL;
	}
	err = sv_ckstore_latest(conf->store, conf->job_id, &rec);
	if (err || !rec)
		return err;
	if (rec->parallelism > 1 &&
	    rec->status != STREAMVISOR__CHECKPOINT_RECORD__STATUS__ABORTED) {
		err = regroup_refused(conf, rec, 1, stateful(p->pl));
		sv_ckstore_free_record(rec);
		return err;
	}
	if (strcmp(rec->plan_id, conf->plan_id)) {
		err = sv_error_new(SV_ERR_CHECKPOINT,
				   "checkpoint %lld belongs to "
				   "plan %s, not %s",
				   (long long)rec->id, rec->plan_id,
				   conf->plan_id);
		sv_ckstore_free_record(rec);
		return sv_error_set_job(err, conf->job_id, conf->attempt);
	}
	const char *decision = "the newest checkpoint, committed";
	int64_t newest = rec->id;
	if (rec->status == STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED) {
		bool done;
		if (!conf->transactional) {
			/* at-least-once: the sink was flushed before the record */
			done = true;
			decision = "the newest checkpoint, prepared; its "
				   "output was "
				   "flushed before it";
		} else if (p->snk->ops->txn_recover) {
			/* file sink: the staged files are durable; finish */
			err = sv_sink_txn_recover(
				p->snk, (const char *)rec->sink_state.data,
				rec->sink_state.len);
			done = !err;
			decision = "the newest checkpoint, prepared; its "
				   "commit was "
				   "completed from its staged files";
		} else {
			/* Kafka: the group's offsets say whether it committed */
			int64_t ck = sv_source_committed_checkpoint(p->src);
			done = ck == rec->id;
			decision = done
				? "the newest checkpoint, prepared; its "
				  "transaction committed"
				: "the newest committed one: the newer "
				  "checkpoint "
				  "was prepared but its transaction did not "
				  "commit, "
				  "marked aborted";
		}
		if (!err)
			err = sv_ckstore_mark(
				conf->store, conf->job_id, rec->id,
				done ? STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED
				     : STREAMVISOR__CHECKPOINT_RECORD__STATUS__ABORTED,
				-1);
		if (!err && !done) {
			int64_t id = rec->id;
			sv_ckstore_free_record(rec);
			rec = NULL;
			err = sv_ckstore_latest_committed(
				conf->store, conf->job_id, id, &rec);
		}
	} else if (rec->status ==
		   STREAMVISOR__CHECKPOINT_RECORD__STATUS__ABORTED) {
		decision = "the newest committed one: the newer checkpoint was "
			   "aborted";
		int64_t id = rec->id;
		sv_ckstore_free_record(rec);
		rec = NULL;
		err = sv_ckstore_latest_committed(conf->store, conf->job_id, id,
						  &rec);
	}
	if (!err && rec)
		err = restore(conf, p, rec, wm_out);
	if (!err && rec) {
		*restored = rec->id;
		sv_logctx_t lc = {conf->job_id, conf->attempt};
		sv_log(&lc, SV_LOG_INFO, "checkpoint",
		       "restored checkpoint %lld, "
		       "newest record %lld (%s)",
		       (long long)rec->id, (long long)newest, decision);
		sv_obslog_add(
			conf->obs, conf->attempt, "checkpoint_restored",
			json_pack("{s:I, s:I, s:s}", "checkpoint_id",
				  (json_int_t)rec->id, "newest_checkpoint_id",
				  (json_int_t)newest, "decision", decision));
	}
	sv_ckstore_free_record(rec);
	return err ? sv_error_set_job(err, conf->job_id, conf->attempt) : NULL;
}
