// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: generic netlink
 *
 * The "nvsidecar" family, as documented in uapi/nvsidecar.h. Built from
 * full struct genl_ops with a policy per op (kernel-compat.md): no split
 * ops, no resv_start_op, no .validate, so the same code registers on 5.10
 * through 7.3 and every op parses strictly (unknown attributes, wrong
 * lengths and trailing bytes are rejected by the core, with extack).
 *
 * The "events" group is open to every user: it carries the same
 * temperatures and thresholds that hwmon shows to everyone, and GPU
 * hotplug, which sysfs shows anyway. Subscribing changes nothing.
 *
 * The family is parallel_ops: no op runs under genl_mutex.
 *
 * Lock order: nvs_gpus_lock is never held while taking gpu->lock here; a
 * GPU is looked up and referenced under nvs_gpus_lock, then filled under
 * its own lock. The event senders are called by core.c and sampler.c,
 * possibly with gpu->lock held, always in process context; they never take
 * gpu->lock and allocate with GFP_KERNEL.
 */
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include "nvs.h"
#include "compat.h"

/* Samples copied out of the ring per gpu->lock hold while dumping. */
#define NVS_SAMPLES_BATCH	32

enum nvs_genl_mcgrp {
	NVS_MCGRP_EVENTS,
};

static const struct genl_multicast_group nvs_genl_mcgrps[] = {
	[NVS_MCGRP_EVENTS] = { .name = NVS_GENL_MCGRP_EVENTS },
};

/*
 * Not const: struct nla_policy's range_signed pointer is not const before
 * 6.2-ish kernels. The policy range keeps s16 min/max out of the picture.
 */
static struct netlink_range_validation_signed nvs_thresh_range = {
	.min = NVS_THRESH_MIN_MC,
	.max = NVS_THRESH_MAX_MC,
};

static const struct nla_policy nvs_thresh_policy[NVS_THRESH_A_MAX_ATTR + 1] = {
	[NVS_THRESH_A_SENSOR]	= { .type = NLA_NUL_STRING, .len = NVS_LABEL_LEN - 1 },
	[NVS_THRESH_A_MAX]	= NLA_POLICY_FULL_RANGE_SIGNED(NLA_S32, &nvs_thresh_range),
	[NVS_THRESH_A_CLEAR]	= { .type = NLA_FLAG },
};

static const struct nla_policy nvs_gpu_get_policy[NVS_A_MAX + 1] = {
	[NVS_A_GPU_INDEX]	= { .type = NLA_U32 },
};

static const struct nla_policy nvs_gpu_set_policy[NVS_A_MAX + 1] = {
	[NVS_A_GPU_INDEX]	= { .type = NLA_U32 },
	[NVS_A_GPU_SAMPLE_HZ]	= NLA_POLICY_MAX(NLA_U32, NVS_SAMPLE_HZ_MAX),
	[NVS_A_GPU_MEM_HZ]	= NLA_POLICY_RANGE(NLA_U32, 1, NVS_MEM_HZ_MAX),
	[NVS_A_SET_THRESHOLD]	= NLA_POLICY_NESTED(nvs_thresh_policy),
	[NVS_A_SET_RESET_PEAKS]	= { .type = NLA_FLAG },
};

static const struct nla_policy nvs_samples_get_policy[NVS_A_MAX + 1] = {
	[NVS_A_GPU_INDEX]	= { .type = NLA_U32 },
	[NVS_A_SAMPLES_SINCE]	= { .type = NLA_U64 },
};

static const struct nla_policy nvs_dmabuf_probe_policy[NVS_A_MAX + 1] = {
	[NVS_A_GPU_INDEX]	= { .type = NLA_U32 },
	[NVS_A_DMABUF_FD]	= NLA_POLICY_MIN(NLA_S32, 0),
	[NVS_A_DMABUF_IMPORTER]	= { .type = NLA_NUL_STRING, .len = NVS_BUSID_LEN - 1 },
};

static struct genl_family nvs_genl_family;
static bool nvs_genl_registered;

/* A reading taken before sampling stopped is not a current reading. */
static bool nvs_sensor_current(const struct nvs_gpu *gpu, unsigned int i)
{
	if (!gpu->sensor[i].valid || gpu->removed)
		return false;
	return gpu->status == NVS_STATUS_OK ||
	       gpu->status == NVS_STATUS_UNAVAILABLE;
}

/* Caller holds gpu->lock, or is the sampler updating this sensor. */
static int nvs_put_sensor(struct sk_buff *skb, const struct nvs_gpu *gpu,
			  unsigned int i, int attrtype)
{
	const struct nvs_sensor *s = &gpu->sensor[i];
	struct nlattr *nest;

	nest = nla_nest_start(skb, attrtype);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, NVS_SENSOR_A_ID, i) ||
	    nla_put_string(skb, NVS_SENSOR_A_LABEL, nvs_sensor_label(gpu, i)) ||
	    nla_put_u8(skb, NVS_SENSOR_A_VALID, nvs_sensor_current(gpu, i)) ||
	    nla_put_s32(skb, NVS_SENSOR_A_MC, s->mc))
		goto out_cancel;
	if (s->has_hist &&
	    (nla_put_s32(skb, NVS_SENSOR_A_PEAK, s->highest) ||
	     nla_put_s32(skb, NVS_SENSOR_A_LOW, s->lowest)))
		goto out_cancel;
	if (s->has_max && nla_put_s32(skb, NVS_SENSOR_A_MAX, s->max))
		goto out_cancel;
	if (nla_put_u8(skb, NVS_SENSOR_A_ALARM,
		       s->has_max && s->alarm && nvs_sensor_current(gpu, i)))
		goto out_cancel;
	nla_nest_end(skb, nest);
	return 0;

out_cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

static enum nvs_status nvs_status_of(const struct nvs_gpu *gpu)
{
	return gpu->removed ? NVS_STATUS_REMOVED : gpu->status;
}

/* Caller holds gpu->lock. */
static int nvs_put_gpu(struct sk_buff *skb, struct nvs_gpu *gpu)
{
	struct nlattr *nest;
	unsigned int i;
	u32 flags = 0;

	if (gpu->simulated)
		flags |= NVS_GPU_F_SIMULATED;
	if (gpu->driver_bound)
		flags |= NVS_GPU_F_DRIVER_BOUND;
	if (gpu->simulated && !gpu->free_sim)
		flags |= NVS_GPU_F_SIM_OWNED;

	if (nla_put_u32(skb, NVS_A_GPU_INDEX, gpu->index) ||
	    nla_put_string(skb, NVS_A_GPU_BUSID, nvs_gpu_busid(gpu)) ||
	    nla_put_u16(skb, NVS_A_GPU_VENDOR, gpu->pdev->vendor) ||
	    nla_put_u16(skb, NVS_A_GPU_DEVICE, gpu->pdev->device) ||
	    nla_put_string(skb, NVS_A_GPU_CHIP, nvs_chip_name(gpu)) ||
	    nla_put_string(skb, NVS_A_GPU_NAME, gpu->name) ||
	    nla_put_u32(skb, NVS_A_GPU_STATUS, nvs_status_of(gpu)) ||
	    nla_put_string(skb, NVS_A_GPU_STATUS_REASON, gpu->reason) ||
	    nla_put_u32(skb, NVS_A_GPU_SAMPLE_HZ, gpu->sample_hz) ||
	    nla_put_u32(skb, NVS_A_GPU_FLAGS, flags) ||
	    nla_put_u64_64bit(skb, NVS_A_GPU_SAMPLES, gpu->samples,
			      NVS_A_PAD) ||
	    nla_put_u64_64bit(skb, NVS_A_GPU_UNAVAILABLE, gpu->unavailable,
			      NVS_A_PAD) ||
	    nla_put_u64_64bit(skb, NVS_A_GPU_CROSSINGS, gpu->crossings,
			      NVS_A_PAD) ||
	    nla_put_u64_64bit(skb, NVS_A_GPU_LAST_SAMPLE_NS,
			      gpu->last_sample_ns, NVS_A_PAD) ||
	    nla_put_u64_64bit(skb, NVS_A_GPU_SEQ, gpu->seq, NVS_A_PAD) ||
	    nla_put_u64_64bit(skb, NVS_A_GPU_MMIO_READS, gpu->mmio_reads,
			      NVS_A_PAD) ||
	    nla_put_u32(skb, NVS_A_GPU_MEM_HZ, gpu->mem_hz))
		return -EMSGSIZE;

	nest = nla_nest_start(skb, NVS_A_GPU_SENSORS);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < gpu->nsensors; i++) {
		if (!gpu->sensor[i].present)
			continue;
		if (nvs_put_sensor(skb, gpu, i, NVS_A_GPU_SENSOR)) {
			nla_nest_cancel(skb, nest);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(skb, nest);
	return 0;
}

static struct nvs_gpu *nvs_lookup(struct nlattr *attr,
				  struct netlink_ext_ack *extack)
{
	struct nvs_gpu *gpu = nvs_gpu_get_by_index(nla_get_u32(attr));

	if (!gpu)
		NL_SET_ERR_MSG_ATTR(extack, attr, "No GPU with this index");
	return gpu;
}

static int nvs_gpu_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nvs_gpu *gpu;
	struct sk_buff *msg;
	void *hdr;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, NVS_A_GPU_INDEX))
		return -EINVAL;
	gpu = nvs_lookup(info->attrs[NVS_A_GPU_INDEX], info->extack);
	if (!gpu)
		return -ENODEV;

	ret = -ENOMEM;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		goto out_put_gpu;
	ret = -EMSGSIZE;
	hdr = genlmsg_put_reply(msg, info, &nvs_genl_family, 0,
				NVS_CMD_GPU_GET);
	if (!hdr)
		goto out_free_msg;
	mutex_lock(&gpu->lock);
	nvs_sample_on_demand(gpu);
	ret = nvs_put_gpu(msg, gpu);
	mutex_unlock(&gpu->lock);
	if (ret)
		goto out_free_msg;
	genlmsg_end(msg, hdr);
	nvs_gpu_put(gpu);
	return genlmsg_reply(msg, info);

out_free_msg:
	nlmsg_free(msg);
out_put_gpu:
	nvs_gpu_put(gpu);
	return ret;
}

/*
 * prev_seq 0 means "no previous message" to nl_dump_check_consistent(), so
 * a generation of 0 must not be used as a dump sequence.
 */
static unsigned int nvs_dump_seq(unsigned int gen)
{
	return gen + 1 ?: 1;
}

/* The GPU with the smallest index >= from, referenced; NULL when none. */
static struct nvs_gpu *nvs_gpu_next(unsigned int from, unsigned int *gen)
{
	struct nvs_gpu *gpu, *best = NULL;

	mutex_lock(&nvs_gpus_lock);
	*gen = nvs_gen;
	list_for_each_entry(gpu, &nvs_gpus, node) {
		if (gpu->index >= from && (!best || gpu->index < best->index))
			best = gpu;
	}
	if (best)
		kref_get(&best->ref);
	mutex_unlock(&nvs_gpus_lock);
	return best;
}

static int nvs_gpu_get_start(struct netlink_callback *cb)
{
	struct nlattr **attrs = compat_dump_attrs(cb);

	cb->args[0] = 0;	/* next GPU index */
	if (attrs[NVS_A_GPU_INDEX]) {
		NL_SET_ERR_MSG_ATTR(cb->extack, attrs[NVS_A_GPU_INDEX],
				    "A GPU index selects one GPU: send the request without NLM_F_DUMP");
		return -EINVAL;
	}
	return 0;
}

static int nvs_gpu_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned int from = cb->args[0], gen = 0;
	struct nvs_gpu *gpu;
	void *hdr;
	int ret;

	while ((gpu = nvs_gpu_next(from, &gen))) {
		cb->seq = nvs_dump_seq(gen);
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &nvs_genl_family,
				  NLM_F_MULTI, NVS_CMD_GPU_GET);
		if (!hdr) {
			nvs_gpu_put(gpu);
			break;
		}
		genl_dump_check_consistent(cb, hdr);
		mutex_lock(&gpu->lock);
		nvs_sample_on_demand(gpu);
		ret = nvs_put_gpu(skb, gpu);
		mutex_unlock(&gpu->lock);
		from = gpu->index + 1;
		nvs_gpu_put(gpu);
		if (ret) {
			genlmsg_cancel(skb, hdr);
			/* Not even one GPU fits an empty skb: give up, don't spin. */
			if (!skb->len)
				return ret;
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = from;
	}
	if (!gpu)
		cb->seq = nvs_dump_seq(gen);
	return skb->len;
}

struct nvs_samples_ctx {
	struct nvs_gpu *gpu;
	u64 since;		/* next seq to send */
	u64 end;		/* newest seq when the dump started */
	u32 nsensors;
	bool sent_first;
	bool done;
	struct nvs_sample batch[NVS_SAMPLES_BATCH];
};

static int nvs_samples_start(struct netlink_callback *cb)
{
	struct nlattr **attrs = compat_dump_attrs(cb);
	struct nvs_samples_ctx *ctx;
	struct nvs_gpu *gpu;

	cb->args[0] = 0;
	if (!attrs[NVS_A_GPU_INDEX]) {
		NL_SET_ERR_MSG(cb->extack, "Missing NVS_A_GPU_INDEX");
		return -EINVAL;
	}
	gpu = nvs_lookup(attrs[NVS_A_GPU_INDEX], cb->extack);
	if (!gpu)
		return -ENODEV;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx) {
		nvs_gpu_put(gpu);
		return -ENOMEM;
	}
	ctx->gpu = gpu;
	if (attrs[NVS_A_SAMPLES_SINCE])
		ctx->since = nla_get_u64(attrs[NVS_A_SAMPLES_SINCE]);
	mutex_lock(&gpu->lock);
	nvs_sample_on_demand(gpu);
	/* A dump that chased the sampler could run forever: stop at now. */
	ctx->end = gpu->seq;
	ctx->nsensors = min_t(u32, gpu->nsensors, NVS_MAX_SENSORS);
	mutex_unlock(&gpu->lock);
	cb->args[0] = (long)ctx;
	return 0;
}

static int nvs_samples_done(struct netlink_callback *cb)
{
	struct nvs_samples_ctx *ctx = (struct nvs_samples_ctx *)cb->args[0];

	if (ctx) {
		nvs_gpu_put(ctx->gpu);
		kfree(ctx);
	}
	return 0;
}

static int nvs_put_sample(struct sk_buff *skb, const struct nvs_sample *s,
			  u32 nsensors)
{
	struct nlattr *nest;

	nest = nla_nest_start(skb, NVS_A_SAMPLE);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u64_64bit(skb, NVS_SAMPLE_A_SEQ, s->seq,
			      NVS_SAMPLE_A_PAD) ||
	    nla_put_u64_64bit(skb, NVS_SAMPLE_A_TS_NS, s->ts_ns,
			      NVS_SAMPLE_A_PAD) ||
	    nla_put_u32(skb, NVS_SAMPLE_A_VALID, s->valid) ||
	    nla_put(skb, NVS_SAMPLE_A_VALUES, nsensors * sizeof(s32), s->mc)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/*
 * One message per call: the samples since ctx->since that fit, copied from
 * the ring in batches so that gpu->lock is held only for the copy, never
 * while the skb is built. NVS_A_SAMPLES_LOST is sent in the first message
 * and again in any later one whose read found samples overwritten since
 * the previous message; NVS_A_SAMPLES_NEXT ends the last message. Room for
 * both is kept free while samples are added.
 */
static int nvs_samples_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct nvs_samples_ctx *ctx = (struct nvs_samples_ctx *)cb->args[0];
	const size_t tail = 2 * nla_total_size_64bit(sizeof(u64));
	struct nvs_gpu *gpu = ctx->gpu;
	u64 since0 = ctx->since, lost_total = 0, lost, next;
	size_t per_sample;
	struct nlattr *nest;
	unsigned int n, i, want;
	void *hdr;
	int ret;

	if (ctx->done)
		return 0;

	per_sample = nla_total_size(0) +
		     2 * nla_total_size_64bit(sizeof(u64)) +
		     nla_total_size(sizeof(u32)) +
		     nla_total_size(ctx->nsensors * sizeof(s32));

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &nvs_genl_family, NLM_F_MULTI, NVS_CMD_SAMPLES_GET);
	if (!hdr)
		return -EMSGSIZE;
	ret = -EMSGSIZE;
	if (nla_put_u32(skb, NVS_A_GPU_INDEX, gpu->index) ||
	    nla_put_u32(skb, NVS_A_SAMPLES_NSENSORS, ctx->nsensors))
		goto out_cancel;
	nest = nla_nest_start(skb, NVS_A_SAMPLES);
	if (!nest)
		goto out_cancel;

	for (;;) {
		size_t room = skb_tailroom(skb);

		want = room > tail ? (room - tail) / per_sample : 0;
		want = min_t(unsigned int, want, NVS_SAMPLES_BATCH);
		if (!want)
			break;

		mutex_lock(&gpu->lock);
		if (gpu->removed) {
			mutex_unlock(&gpu->lock);
			NL_SET_ERR_MSG(cb->extack, "GPU removed during the dump");
			ret = -ENODEV;
			goto out_cancel;
		}
		n = nvs_ring_read(gpu, ctx->since, ctx->batch, want, &lost,
				  &next);
		mutex_unlock(&gpu->lock);

		/* SINCE 0 asks for the oldest kept: nothing is lost. */
		if (!ctx->sent_first && !ctx->since)
			lost = 0;
		lost_total += lost;

		for (i = 0; i < n && ctx->batch[i].seq <= ctx->end; i++) {
			if (nvs_put_sample(skb, &ctx->batch[i], ctx->nsensors))
				break;
			ctx->since = ctx->batch[i].seq + 1;
		}
		if (i < n && ctx->batch[i].seq > ctx->end) {
			ctx->done = true;
			break;
		}
		if (i < n)	/* skb full despite the estimate */
			break;
		if (n < want) {
			/*
			 * Caught up with the ring. With nothing copied, the
			 * ring says where to resume (a SINCE in the future
			 * resumes at its end).
			 */
			if (!n)
				ctx->since = next;
			ctx->done = true;
			break;
		}
	}
	nla_nest_end(skb, nest);

	if ((!ctx->sent_first || lost_total) &&
	    nla_put_u64_64bit(skb, NVS_A_SAMPLES_LOST, lost_total, NVS_A_PAD))
		goto out_cancel;
	if (ctx->done &&
	    nla_put_u64_64bit(skb, NVS_A_SAMPLES_NEXT, ctx->since, NVS_A_PAD))
		goto out_cancel;
	ctx->sent_first = true;
	genlmsg_end(skb, hdr);
	return skb->len;

out_cancel:
	/* Nothing of this message is sent: send its samples next time. */
	ctx->since = since0;
	ctx->done = false;
	genlmsg_cancel(skb, hdr);
	return ret;
}

/* One NVS_A_SET_THRESHOLD nest, resolved and checked, not yet applied. */
struct nvs_thresh_req {
	unsigned int sensor;
	bool clear;
	s32 mc;
};

/* Caller holds gpu->lock. */
static int nvs_parse_threshold(struct nvs_gpu *gpu, const struct nlattr *attr,
			       struct nvs_thresh_req *req,
			       struct netlink_ext_ack *extack)
{
	struct nlattr *tb[NVS_THRESH_A_MAX_ATTR + 1];
	char label[NVS_LABEL_LEN];
	int ret, i;

	ret = nla_parse_nested(tb, NVS_THRESH_A_MAX_ATTR, attr,
			       nvs_thresh_policy, extack);
	if (ret)
		return ret;
	if (!tb[NVS_THRESH_A_SENSOR]) {
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "Threshold without NVS_THRESH_A_SENSOR");
		return -EINVAL;
	}
	if (!tb[NVS_THRESH_A_MAX] == !tb[NVS_THRESH_A_CLEAR]) {
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "Threshold needs exactly one of NVS_THRESH_A_MAX and NVS_THRESH_A_CLEAR");
		return -EINVAL;
	}
	nla_strscpy(label, tb[NVS_THRESH_A_SENSOR], sizeof(label));
	/* Absent memory modules have no channel anywhere: not found either. */
	i = nvs_sensor_find(gpu, label);
	if (i < 0 || !gpu->sensor[i].present) {
		NL_SET_ERR_MSG_ATTR(extack, tb[NVS_THRESH_A_SENSOR],
				    "No sensor with this label on this GPU");
		return -ENOENT;
	}
	req->sensor = i;
	req->clear = tb[NVS_THRESH_A_CLEAR];
	req->mc = req->clear ? 0 : nla_get_s32(tb[NVS_THRESH_A_MAX]);
	return 0;
}

/*
 * GENL_ADMIN_PERM is CAP_NET_ADMIN, which containers are often given.
 * A rate above the module's default (the sample_hz and mem_hz parameters,
 * chosen by whoever loaded the module) multiplies the register reads on
 * a GPU that another driver owns: that takes CAP_SYS_ADMIN, like a
 * dma-buf probe. Lowering a rate, thresholds and resets do not. Rates
 * compare as passes a second: on demand (0) is up to NVS_ONDEMAND_HZ,
 * more than a default of 5 (review K4). The sysfs
 * files are writable by root alone (file mode) for the same reason.
 */
static int nvs_rate_check(struct sk_buff *skb, struct nlattr **attrs,
			  struct netlink_ext_ack *extack)
{
	struct nlattr *a = NULL;

	if (attrs[NVS_A_GPU_SAMPLE_HZ] &&
	    nvs_effective_hz(nla_get_u32(attrs[NVS_A_GPU_SAMPLE_HZ])) >
	    nvs_effective_hz(READ_ONCE(nvs_default_hz)))
		a = attrs[NVS_A_GPU_SAMPLE_HZ];
	else if (attrs[NVS_A_GPU_MEM_HZ] &&
		 nla_get_u32(attrs[NVS_A_GPU_MEM_HZ]) > READ_ONCE(nvs_default_mem_hz))
		a = attrs[NVS_A_GPU_MEM_HZ];
	if (!a || netlink_capable(skb, CAP_SYS_ADMIN))
		return 0;
	NL_SET_ERR_MSG_ATTR(extack, a,
			    "A rate above the module's default needs CAP_SYS_ADMIN");
	return -EPERM;
}

static int nvs_gpu_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nvs_thresh_req th[NVS_MAX_SENSORS];
	struct nlattr **attrs = info->attrs;
	unsigned int nth = 0, i;
	struct nvs_gpu *gpu;
	struct nlattr *a;
	int rem, ret;

	if (GENL_REQ_ATTR_CHECK(info, NVS_A_GPU_INDEX))
		return -EINVAL;
	gpu = nvs_lookup(attrs[NVS_A_GPU_INDEX], info->extack);
	if (!gpu)
		return -ENODEV;

	/*
	 * Validate every setting before applying any, under one hold of the
	 * lock, so a request is applied whole or not at all. The core kept
	 * only the last NVS_A_SET_THRESHOLD in attrs[]; walk them all.
	 */
	mutex_lock(&gpu->lock);
	ret = -ENODEV;
	if (gpu->removed) {
		NL_SET_ERR_MSG(info->extack, "GPU is being removed");
		goto out_unlock;
	}
	nla_for_each_attr(a, genlmsg_data(info->genlhdr),
			  genlmsg_len(info->genlhdr), rem) {
		if (nla_type(a) != NVS_A_SET_THRESHOLD)
			continue;
		ret = -EINVAL;
		if (nth == ARRAY_SIZE(th)) {
			NL_SET_ERR_MSG_ATTR(info->extack, a,
					    "More thresholds than sensors");
			goto out_unlock;
		}
		ret = nvs_parse_threshold(gpu, a, &th[nth], info->extack);
		if (ret)
			goto out_unlock;
		nth++;
	}
	ret = -EINVAL;
	if (!attrs[NVS_A_GPU_SAMPLE_HZ] && !attrs[NVS_A_GPU_MEM_HZ] && !nth &&
	    !attrs[NVS_A_SET_RESET_PEAKS]) {
		NL_SET_ERR_MSG(info->extack, "Nothing to set");
		goto out_unlock;
	}
	ret = nvs_rate_check(skb, attrs, info->extack);
	if (ret)
		goto out_unlock;

	for (i = 0; i < nth; i++) {
		ret = nvs_set_threshold(gpu, th[i].sensor, th[i].clear,
					th[i].mc);
		if (ret) {
			NL_SET_ERR_MSG(info->extack, "Could not set threshold");
			goto out_unlock;
		}
	}
	if (attrs[NVS_A_GPU_SAMPLE_HZ])
		nvs_sampler_set_hz(gpu, nla_get_u32(attrs[NVS_A_GPU_SAMPLE_HZ]));
	if (attrs[NVS_A_GPU_MEM_HZ])
		nvs_sampler_set_mem_hz(gpu, nla_get_u32(attrs[NVS_A_GPU_MEM_HZ]));
	if (attrs[NVS_A_SET_RESET_PEAKS])
		nvs_reset_history(gpu, -1);
	ret = 0;

out_unlock:
	mutex_unlock(&gpu->lock);
	nvs_gpu_put(gpu);
	return ret;
}

static int nvs_put_dmabuf(struct sk_buff *skb, struct nvs_dmabuf_report *rep)
{
	struct nlattr *nest;

	rep->exporter[sizeof(rep->exporter) - 1] = '\0';
	rep->importer[sizeof(rep->importer) - 1] = '\0';
	nest = nla_nest_start(skb, NVS_A_DMABUF);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, NVS_DMABUF_A_STEP, rep->step) ||
	    nla_put_s32(skb, NVS_DMABUF_A_ERRNO, rep->err) ||
	    nla_put_string(skb, NVS_DMABUF_A_EXPORTER, rep->exporter) ||
	    nla_put_string(skb, NVS_DMABUF_A_IMPORTER, rep->importer) ||
	    nla_put_u64_64bit(skb, NVS_DMABUF_A_SIZE, rep->size,
			      NVS_DMABUF_A_PAD) ||
	    nla_put_u32(skb, NVS_DMABUF_A_NENTS, rep->nents) ||
	    nla_put_u64_64bit(skb, NVS_DMABUF_A_MAPPED, rep->mapped,
			      NVS_DMABUF_A_PAD) ||
	    nla_put_u64_64bit(skb, NVS_DMABUF_A_SEG_MIN, rep->seg_min,
			      NVS_DMABUF_A_PAD) ||
	    nla_put_u64_64bit(skb, NVS_DMABUF_A_SEG_MAX, rep->seg_max,
			      NVS_DMABUF_A_PAD) ||
	    nla_put_u32(skb, NVS_DMABUF_A_VERDICT, rep->verdict) ||
	    nla_put_u64_64bit(skb, NVS_DMABUF_A_BAR1_START, rep->bar1_start,
			      NVS_DMABUF_A_PAD) ||
	    nla_put_u64_64bit(skb, NVS_DMABUF_A_BAR1_LEN, rep->bar1_len,
			      NVS_DMABUF_A_PAD) ||
	    nla_put_u32(skb, NVS_DMABUF_A_P2P, rep->p2p) ||
	    nla_put_s32(skb, NVS_DMABUF_A_P2P_DISTANCE, rep->p2p_distance) ||
	    nla_put_u32(skb, NVS_DMABUF_A_ADDR, rep->addr) ||
	    nla_put_u32(skb, NVS_DMABUF_A_MOVED, rep->moved)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int nvs_dmabuf_probe_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct nvs_dmabuf_report *rep;
	char importer[NVS_BUSID_LEN];
	const char *imp = NULL;
	struct nvs_gpu *gpu = NULL;
	struct sk_buff *msg;
	void *hdr;
	int ret;

	/*
	 * It DMA-maps a buffer for a PCI device of the caller's choosing:
	 * a device-level operation, as config space beyond the header and
	 * BAR access are. CAP_NET_ADMIN (GENL_ADMIN_PERM, checked by the
	 * core) is what network agents in containers hold; this needs more.
	 */
	if (!netlink_capable(skb, CAP_SYS_ADMIN)) {
		NL_SET_ERR_MSG(info->extack, "A dma-buf probe needs CAP_SYS_ADMIN");
		return -EPERM;
	}
	if (GENL_REQ_ATTR_CHECK(info, NVS_A_DMABUF_FD))
		return -EINVAL;
	if (attrs[NVS_A_DMABUF_IMPORTER]) {
		nla_strscpy(importer, attrs[NVS_A_DMABUF_IMPORTER],
			    sizeof(importer));
		imp = importer;
	}
	if (attrs[NVS_A_GPU_INDEX]) {
		gpu = nvs_lookup(attrs[NVS_A_GPU_INDEX], info->extack);
		if (!gpu)
			return -ENODEV;
	}
	if (!imp && !gpu) {
		NL_SET_ERR_MSG(info->extack,
			       "Name an importer (NVS_A_DMABUF_IMPORTER) or a GPU (NVS_A_GPU_INDEX)");
		return -EINVAL;
	}

	ret = -ENOMEM;
	rep = kzalloc(sizeof(*rep), GFP_KERNEL);
	if (!rep)
		goto out_put_gpu;
	ret = nvs_dmabuf_probe(nla_get_s32(attrs[NVS_A_DMABUF_FD]), imp, gpu,
			       rep, info->extack);
	if (ret)
		goto out_free_rep;

	ret = -ENOMEM;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		goto out_free_rep;
	ret = -EMSGSIZE;
	hdr = genlmsg_put_reply(msg, info, &nvs_genl_family, 0,
				NVS_CMD_DMABUF_PROBE);
	if (!hdr)
		goto out_free_msg;
	ret = nvs_put_dmabuf(msg, rep);
	if (ret)
		goto out_free_msg;
	genlmsg_end(msg, hdr);
	ret = genlmsg_reply(msg, info);
	goto out_free_rep;

out_free_msg:
	nlmsg_free(msg);
out_free_rep:
	kfree(rep);
out_put_gpu:
	if (gpu)
		nvs_gpu_put(gpu);
	return ret;
}

static const struct genl_ops nvs_genl_ops[] = {
	{
		.cmd = NVS_CMD_GPU_GET,
		.doit = nvs_gpu_get_doit,
		.start = nvs_gpu_get_start,
		.dumpit = nvs_gpu_get_dumpit,
		.policy = nvs_gpu_get_policy,
		.maxattr = NVS_A_MAX,
	}, {
		.cmd = NVS_CMD_GPU_SET,
		.doit = nvs_gpu_set_doit,
		.policy = nvs_gpu_set_policy,
		.maxattr = NVS_A_MAX,
		.flags = GENL_ADMIN_PERM,
	}, {
		.cmd = NVS_CMD_SAMPLES_GET,
		.start = nvs_samples_start,
		.dumpit = nvs_samples_dumpit,
		.done = nvs_samples_done,
		.policy = nvs_samples_get_policy,
		.maxattr = NVS_A_MAX,
	}, {
		.cmd = NVS_CMD_DMABUF_PROBE,
		.doit = nvs_dmabuf_probe_doit,
		.policy = nvs_dmabuf_probe_policy,
		.maxattr = NVS_A_MAX,
		.flags = GENL_ADMIN_PERM,
	},
};

static struct genl_family nvs_genl_family __ro_after_init = {
	.ops = nvs_genl_ops,
	.n_ops = ARRAY_SIZE(nvs_genl_ops),
	.mcgrps = nvs_genl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(nvs_genl_mcgrps),
	.name = NVS_GENL_NAME,
	.version = NVS_GENL_VERSION,
	.module = THIS_MODULE,
	.netnsok = false,
	/*
	 * The ops do their own locking (nvs_gpus_lock, gpu->lock) and never
	 * rely on genl_mutex. Without this, a dma-buf probe waiting on a
	 * fence would hold genl_mutex, and every generic netlink user on the
	 * host (nlctrl family lookups included) with it. genl_rcv() still
	 * holds cb_lock for read across each doit, which a family
	 * (un)registration takes for write: the probe bounds and makes
	 * interruptible what it waits for (dmabuf.c).
	 */
	.parallel_ops = true,
};

typedef int (*nvs_event_fill_t)(struct sk_buff *msg, struct nvs_gpu *gpu,
				unsigned int arg);

/*
 * Builds and multicasts one NVS_CMD_EVENT: the common attributes, then
 * what fill adds. Events are best effort: with nobody listening nothing
 * is built, and a failed allocation drops the event.
 */
static int nvs_send_event(enum nvs_event ev, struct nvs_gpu *gpu,
			  nvs_event_fill_t fill, unsigned int arg)
{
	struct sk_buff *msg;
	void *hdr;
	int ret;

	if (!READ_ONCE(nvs_genl_registered) ||
	    !genl_has_listeners(&nvs_genl_family, &init_net, NVS_MCGRP_EVENTS))
		return 0;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	ret = -EMSGSIZE;
	hdr = genlmsg_put(msg, 0, 0, &nvs_genl_family, 0, NVS_CMD_EVENT);
	if (!hdr)
		goto out_free_msg;
	if (nla_put_u32(msg, NVS_A_EVENT_TYPE, ev) ||
	    nla_put_u64_64bit(msg, NVS_A_EVENT_TS_NS, ktime_get_ns(),
			      NVS_A_PAD) ||
	    nla_put_u32(msg, NVS_A_GPU_INDEX, gpu->index) ||
	    nla_put_string(msg, NVS_A_GPU_BUSID, nvs_gpu_busid(gpu)))
		goto out_cancel_msg;
	if (fill) {
		ret = fill(msg, gpu, arg);
		if (ret)
			goto out_cancel_msg;
	}
	genlmsg_end(msg, hdr);
	/* -ESRCH: the last listener left since the check above. */
	ret = genlmsg_multicast(&nvs_genl_family, msg, 0, NVS_MCGRP_EVENTS,
				GFP_KERNEL);
	return ret == -ESRCH ? 0 : ret;

out_cancel_msg:
	genlmsg_cancel(msg, hdr);
out_free_msg:
	nlmsg_free(msg);
	return ret;
}

static int nvs_fill_status(struct sk_buff *msg, struct nvs_gpu *gpu,
			   unsigned int unused)
{
	char reason[sizeof(gpu->reason)];

	/* The caller may not hold gpu->lock: copy the reason bounded. */
	strscpy(reason, gpu->reason, sizeof(reason));
	if (nla_put_u32(msg, NVS_A_GPU_STATUS, nvs_status_of(gpu)) ||
	    nla_put_string(msg, NVS_A_GPU_STATUS_REASON, reason))
		return -EMSGSIZE;
	return 0;
}

static int nvs_fill_sensor(struct sk_buff *msg, struct nvs_gpu *gpu,
			   unsigned int sensor)
{
	return nvs_put_sensor(msg, gpu, sensor, NVS_A_GPU_SENSOR);
}

/* Process context; may be called with gpu->lock held (see the top). */
void nvs_genl_event_gpu(struct nvs_gpu *gpu, enum nvs_event ev)
{
	switch (ev) {
	case NVS_EVENT_GPU_ADDED:
	case NVS_EVENT_GPU_REMOVED:
		nvs_send_event(ev, gpu, NULL, 0);
		break;
	case NVS_EVENT_STATUS_CHANGED:
		nvs_send_event(ev, gpu, nvs_fill_status, 0);
		break;
	default:
		break;
	}
}

/* Called by the sampler with gpu->lock held. */
void nvs_genl_event_threshold(struct nvs_gpu *gpu, unsigned int sensor,
			      bool crossed)
{
	if (sensor >= gpu->nsensors)
		return;
	nvs_send_event(crossed ? NVS_EVENT_THRESHOLD_CROSSED :
				 NVS_EVENT_THRESHOLD_CLEARED,
		       gpu, nvs_fill_sensor, sensor);
}

int nvs_genl_init(void)
{
	int ret;

	ret = genl_register_family(&nvs_genl_family);
	if (ret)
		return ret;
	WRITE_ONCE(nvs_genl_registered, true);
	return 0;
}

/* core.c has stopped every event source before this runs. */
void nvs_genl_uninit(void)
{
	WRITE_ONCE(nvs_genl_registered, false);
	genl_unregister_family(&nvs_genl_family);
}
