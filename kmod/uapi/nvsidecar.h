/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * nvsidecar generic netlink ABI.
 *
 * Family NVS_GENL_NAME ("nvsidecar"), version NVS_GENL_VERSION, multicast
 * group NVS_GENL_MCGRP_EVENTS ("events"). docs/netlink/nvsidecar.yaml is
 * the same ABI in the kernel's YNL schema (scripts/ynl-check keeps this
 * header, the kernel's policies and the spec in step). Every request
 * attribute below is validated by a policy: unknown attributes, wrong
 * types or lengths and out-of-range values are rejected (-EINVAL or
 * -ERANGE) with an extended-ack message. The header carries no
 * family-specific header (hdrsize 0).
 *
 * NVS_CMD_GPU_GET
 *   do (needs NVS_A_GPU_INDEX) or dump (all GPUs); any user.
 *   Request:  NVS_A_GPU_INDEX: u32 (do only)
 *   Reply, one message per GPU:
 *     NVS_A_GPU_INDEX: u32           discovery order, the N in gpuN
 *     NVS_A_GPU_BUSID: string        "0000:01:00.0"
 *     NVS_A_GPU_VENDOR: u16
 *     NVS_A_GPU_DEVICE: u16
 *     NVS_A_GPU_CHIP: string         recipe name, e.g. "gb202"
 *     NVS_A_GPU_NAME: string         marketing name, e.g. "GeForce RTX 5090"
 *     NVS_A_GPU_STATUS: u32          enum nvs_status
 *     NVS_A_GPU_STATUS_REASON: string
 *     NVS_A_GPU_SAMPLE_HZ: u32       0 = read on demand (GPU_GET and
 *                                    SAMPLES_GET then take a fresh
 *                                    sample, at most 50 a second)
 *     NVS_A_GPU_FLAGS: u32           NVS_GPU_F_*
 *     NVS_A_GPU_SAMPLES: u64         samples taken
 *     NVS_A_GPU_UNAVAILABLE: u64     sample passes skipped or unreadable
 *     NVS_A_GPU_CROSSINGS: u64       threshold crossings, all sensors
 *     NVS_A_GPU_LAST_SAMPLE_NS: u64  CLOCK_MONOTONIC ns of the last sample
 *     NVS_A_GPU_SEQ: u64             sequence number of the newest sample
 *     NVS_A_GPU_MMIO_READS: u64      32-bit register reads done so far
 *     NVS_A_GPU_MEM_HZ: u32          memory-sensor passes a second
 *     NVS_A_GPU_SENSORS: nest
 *       NVS_A_GPU_SENSOR: nest, repeated, in sensor id order; memory
 *                         modules absent from the board are left out
 *         NVS_SENSOR_A_ID: u32       index into the sample value array
 *         NVS_SENSOR_A_LABEL: string "hotspot", "ch0", "mem3", ...
 *         NVS_SENSOR_A_VALID: u8     1 if NVS_SENSOR_A_MC is a real reading
 *         NVS_SENSOR_A_MC: s32       current value, milli-degrees Celsius
 *         NVS_SENSOR_A_PEAK: s32     highest since reset (if any valid)
 *         NVS_SENSOR_A_LOW: s32      lowest since reset (if any valid)
 *         NVS_SENSOR_A_MAX: s32      threshold, m°C (absent: none set)
 *         NVS_SENSOR_A_ALARM: u8     1 while VALID and MC > MAX
 *   A dump interrupted by a GPU being added or removed is flagged with
 *   NLM_F_DUMP_INTR; userspace retries it. A dump request carrying
 *   NVS_A_GPU_INDEX is refused (-EINVAL): use a do for one GPU.
 *   Errors: -ENODEV (no such index), -EINVAL (bad attribute, a do without
 *   NVS_A_GPU_INDEX, a dump with it), -ENOMEM, -EMSGSIZE (one GPU's reply
 *   does not fit a message).
 *
 * NVS_CMD_SAMPLES_GET
 *   dump; any user.
 *   Request:  NVS_A_GPU_INDEX: u32 (required)
 *             NVS_A_SAMPLES_SINCE: u64 (first seq wanted; 0 = oldest kept)
 *   Reply, one or more messages:
 *     NVS_A_GPU_INDEX: u32
 *     NVS_A_SAMPLES_NSENSORS: u32    values per sample
 *     NVS_A_SAMPLES_LOST: u64        samples between SINCE and the oldest
 *                                    one still in the ring (first message;
 *                                    again in a later message if more were
 *                                    overwritten while the dump was being
 *                                    read: the loss is the sum)
 *     NVS_A_SAMPLES_NEXT: u64        seq to ask for next time (last message)
 *     NVS_A_SAMPLES: nest
 *       NVS_A_SAMPLE: nest, repeated, in seq order
 *         NVS_SAMPLE_A_SEQ: u64
 *         NVS_SAMPLE_A_TS_NS: u64    CLOCK_MONOTONIC ns
 *         NVS_SAMPLE_A_VALID: u32    bit i set: value i is valid
 *         NVS_SAMPLE_A_VALUES: binary, NSENSORS x s32 m°C, host order
 *                           (in YNL: binary with sub-type s32)
 *   Sequence numbers start at 1 and never repeat while the module is loaded.
 *   The dump ends at the newest sample at the time of the request. A SINCE
 *   beyond the newest sample returns no samples and NEXT = newest + 1.
 *   Errors: -EINVAL (no NVS_A_GPU_INDEX, bad attribute), -ENODEV (no such
 *   index, or the GPU was removed during the dump: extack says so),
 *   -ENOMEM.
 *
 * NVS_CMD_GPU_SET
 *   do; CAP_NET_ADMIN (GENL_ADMIN_PERM). A SAMPLE_HZ or MEM_HZ above the
 *   module's default (its sample_hz and mem_hz parameters) raises the
 *   register-read budget and needs CAP_SYS_ADMIN as well (-EPERM). Rates
 *   compare as passes a second, SAMPLE_HZ 0 as 50: with a default of 5,
 *   0 (on demand) is a raise.
 *   Request:  NVS_A_GPU_INDEX: u32 (required)
 *             NVS_A_GPU_SAMPLE_HZ: u32 (0..NVS_SAMPLE_HZ_MAX)
 *             NVS_A_GPU_MEM_HZ: u32 (1..NVS_MEM_HZ_MAX)
 *             NVS_A_SET_THRESHOLD: nest, repeatable (one per sensor)
 *               NVS_THRESH_A_SENSOR: string, sensor label
 *               NVS_THRESH_A_MAX: s32 m°C, NVS_THRESH_MIN_MC..NVS_THRESH_MAX_MC
 *               NVS_THRESH_A_CLEAR: flag, remove the threshold instead
 *             NVS_A_SET_RESET_PEAKS: flag
 *   All values are checked before anything is applied. Each threshold
 *   nest needs SENSOR and exactly one of MAX and CLEAR. A request with
 *   nothing to set is -EINVAL.
 *   Errors: -EPERM (no CAP_NET_ADMIN, or a rate raise without
 *   CAP_SYS_ADMIN), -ENODEV (no such index, or the GPU is being removed),
 *   -EINVAL (bad attribute, no NVS_A_GPU_INDEX, nothing to set, a
 *   malformed threshold nest, more thresholds than sensors) / -ERANGE (a
 *   value out of range): extack says which, -ENOENT (no sensor with that
 *   label, or a memory module absent from the board).
 *
 * NVS_CMD_DMABUF_PROBE
 *   do; CAP_NET_ADMIN (GENL_ADMIN_PERM) and CAP_SYS_ADMIN. Takes a file
 *   descriptor of the calling process. The importer must be owned by a
 *   driver that keeps it (not vfio-pci or its variants, pci-stub or
 *   uio_pci_generic; a simulated GPU without ":owned" excepted). Only
 *   static exporters are probed (NVIDIA's is one): mapping a dynamic
 *   exporter's buffer may move it, so those are refused (-EOPNOTSUPP).
 *   The steps, in the order they are taken: GET (the fd), FENCE (the
 *   exporter's fences are waited for, 5 s at most), ATTACH, MAP (the
 *   mapping and the walk over it), DONE. The enum values are not in that
 *   order (FENCE came last once): compare steps for equality only.
 *   Request:  NVS_A_DMABUF_FD: s32 (required)
 *             NVS_A_DMABUF_IMPORTER: string, PCI bus id of the importing
 *                                    device (default: the GPU below)
 *             NVS_A_GPU_INDEX: u32, GPU whose BAR1 is compared against
 *   Reply:
 *     NVS_A_DMABUF: nest
 *       NVS_DMABUF_A_STEP: u32       enum nvs_dmabuf_step: DONE, or the
 *                                    step that failed
 *       NVS_DMABUF_A_ERRNO: s32      0, or the error at STEP (positive)
 *       NVS_DMABUF_A_EXPORTER: string
 *       NVS_DMABUF_A_IMPORTER: string
 *       NVS_DMABUF_A_SIZE: u64
 *       NVS_DMABUF_A_NENTS: u32
 *       NVS_DMABUF_A_MAPPED: u64     sum of sg_dma_len
 *       NVS_DMABUF_A_SEG_MIN: u64
 *       NVS_DMABUF_A_SEG_MAX: u64
 *       NVS_DMABUF_A_VERDICT: u32    enum nvs_dmabuf_verdict
 *       NVS_DMABUF_A_BAR1_START: u64
 *       NVS_DMABUF_A_BAR1_LEN: u64
 *       NVS_DMABUF_A_P2P: u32        enum nvs_p2p_state
 *       NVS_DMABUF_A_P2P_DISTANCE: s32
 *       NVS_DMABUF_A_ADDR: u32       enum nvs_dmabuf_addr: what kind of
 *                                    addresses the exporter handed out
 *       NVS_DMABUF_A_MOVED: u32      move_notify calls while attached
 *                                    (nonzero: the addresses may be stale).
 *                                    Only dynamic exporters call it, and
 *                                    they are refused: 0 in practice
 *   NENTS, MAPPED, SEG_MIN, SEG_MAX, VERDICT and ADDR describe the mapping
 *   only at STEP DONE; at any other step they are 0 and UNKNOWN, a walk
 *   cut short by a fatal signal included (no verdict from part of the
 *   buffer).
 *   A failure after the fd was resolved still returns the reply (with STEP
 *   and ERRNO) so the caller learns how far it got, apart from the
 *   probe's own refusals (-ENODEV, -EPERM, -EOPNOTSUPP below), which are
 *   plain errors:
 *     STEP FENCE:  ETIMEDOUT (the fences did not signal in 5 s), EINTR (a
 *                  signal while waiting)
 *     STEP ATTACH: EINTR (a signal while waiting for the importer's device
 *                  lock), EBUSY (someone holds the exporter's reservation
 *                  lock: probe again), or the exporter's refusal of the
 *                  peer-to-peer attachment (its errno)
 *     STEP MAP:    EINTR (a signal while waiting for the reservation lock,
 *                  or a fatal signal during the walk), or the exporter's
 *                  refusal to map the buffer for the importer (its errno)
 *   Other failures are plain errors: -EBADF (not an open fd of the
 *   caller), -EINVAL (not a dma-buf, no NVS_A_DMABUF_FD, an IMPORTER that
 *   is not a PCI bus id as pci_name() writes it, or neither IMPORTER nor
 *   GPU_INDEX given), -ERANGE (negative fd), -ENODEV (no such importer or
 *   GPU, or it was removed), -EPERM (capabilities, or an importer without
 *   a driver or owned by one that hands it to a guest or userspace; extack
 *   says which), -EOPNOTSUPP (a dynamic exporter; or the importer's DMA
 *   may bounce through swiotlb, or it is not DMA-coherent: not probed),
 *   -ENOMEM, -EMSGSIZE.
 *
 * NVS_CMD_EVENT (multicast, group "events", never requested; any user may
 * subscribe: it carries nothing that hwmon and sysfs do not show to all)
 *     NVS_A_EVENT_TYPE: u32          enum nvs_event
 *     NVS_A_EVENT_TS_NS: u64         CLOCK_MONOTONIC ns
 *     NVS_A_GPU_INDEX, NVS_A_GPU_BUSID
 *     NVS_A_GPU_STATUS, NVS_A_GPU_STATUS_REASON   (STATUS_CHANGED)
 *     NVS_A_GPU_SENSOR: nest, as in GPU_GET       (THRESHOLD_*)
 */
#ifndef _UAPI_NVSIDECAR_H
#define _UAPI_NVSIDECAR_H

#define NVS_GENL_NAME		"nvsidecar"
#define NVS_GENL_VERSION	1
#define NVS_GENL_MCGRP_EVENTS	"events"

#define NVS_MAX_SENSORS		32
#define NVS_SAMPLE_HZ_MAX	1000
#define NVS_MEM_HZ_MAX		10
#define NVS_THRESH_MIN_MC	(-40000)
#define NVS_THRESH_MAX_MC	200000
#define NVS_LABEL_LEN		16
#define NVS_BUSID_LEN		16

enum nvs_cmd {
	NVS_CMD_UNSPEC,
	NVS_CMD_GPU_GET,
	NVS_CMD_GPU_SET,
	NVS_CMD_SAMPLES_GET,
	NVS_CMD_DMABUF_PROBE,
	NVS_CMD_EVENT,
	__NVS_CMD_LAST
};
#define NVS_CMD_MAX (__NVS_CMD_LAST - 1)

enum nvs_status {
	NVS_STATUS_OK,
	NVS_STATUS_NO_DRIVER,
	NVS_STATUS_ASLEEP,
	NVS_STATUS_UNAVAILABLE,
	NVS_STATUS_REMOVED,
	__NVS_STATUS_LAST
};

enum nvs_gpu_flag {
	NVS_GPU_F_SIMULATED = 1U << 0,
	NVS_GPU_F_DRIVER_BOUND = 1U << 1,
	/* simulated, and read only while a driver owns it (sim=...:owned) */
	NVS_GPU_F_SIM_OWNED = 1U << 2,
	__NVS_GPU_F_ALL = NVS_GPU_F_SIMULATED | NVS_GPU_F_DRIVER_BOUND |
			  NVS_GPU_F_SIM_OWNED
};

enum nvs_event {
	NVS_EVENT_UNSPEC,
	NVS_EVENT_THRESHOLD_CROSSED,
	NVS_EVENT_THRESHOLD_CLEARED,
	NVS_EVENT_GPU_ADDED,
	NVS_EVENT_GPU_REMOVED,
	NVS_EVENT_STATUS_CHANGED,
	__NVS_EVENT_LAST
};

enum nvs_attr {
	NVS_A_UNSPEC,
	NVS_A_GPU_INDEX,
	NVS_A_GPU_BUSID,
	NVS_A_GPU_VENDOR,
	NVS_A_GPU_DEVICE,
	NVS_A_GPU_CHIP,
	NVS_A_GPU_NAME,
	NVS_A_GPU_STATUS,
	NVS_A_GPU_STATUS_REASON,
	NVS_A_GPU_SAMPLE_HZ,
	NVS_A_GPU_FLAGS,
	NVS_A_GPU_SAMPLES,
	NVS_A_GPU_UNAVAILABLE,
	NVS_A_GPU_CROSSINGS,
	NVS_A_GPU_LAST_SAMPLE_NS,
	NVS_A_GPU_SEQ,
	NVS_A_GPU_SENSORS,
	NVS_A_GPU_SENSOR,
	NVS_A_SAMPLES_SINCE,
	NVS_A_SAMPLES_NSENSORS,
	NVS_A_SAMPLES_LOST,
	NVS_A_SAMPLES_NEXT,
	NVS_A_SAMPLES,
	NVS_A_SAMPLE,
	NVS_A_SET_THRESHOLD,
	NVS_A_SET_RESET_PEAKS,
	NVS_A_DMABUF_FD,
	NVS_A_DMABUF_IMPORTER,
	NVS_A_DMABUF,
	NVS_A_EVENT_TYPE,
	NVS_A_EVENT_TS_NS,
	NVS_A_PAD,
	/* added after version 1's first release: numbered after PAD */
	NVS_A_GPU_MMIO_READS,
	NVS_A_GPU_MEM_HZ,
	__NVS_A_LAST
};
#define NVS_A_MAX (__NVS_A_LAST - 1)

enum nvs_sensor_attr {
	NVS_SENSOR_A_UNSPEC,
	NVS_SENSOR_A_ID,
	NVS_SENSOR_A_LABEL,
	NVS_SENSOR_A_VALID,
	NVS_SENSOR_A_MC,
	NVS_SENSOR_A_PEAK,
	NVS_SENSOR_A_LOW,
	NVS_SENSOR_A_MAX,
	NVS_SENSOR_A_ALARM,
	__NVS_SENSOR_A_LAST
};
#define NVS_SENSOR_A_MAX_ATTR (__NVS_SENSOR_A_LAST - 1)

enum nvs_sample_attr {
	NVS_SAMPLE_A_UNSPEC,
	NVS_SAMPLE_A_SEQ,
	NVS_SAMPLE_A_TS_NS,
	NVS_SAMPLE_A_VALID,
	NVS_SAMPLE_A_VALUES,
	NVS_SAMPLE_A_PAD,
	__NVS_SAMPLE_A_LAST
};
#define NVS_SAMPLE_A_MAX (__NVS_SAMPLE_A_LAST - 1)

enum nvs_thresh_attr {
	NVS_THRESH_A_UNSPEC,
	NVS_THRESH_A_SENSOR,
	NVS_THRESH_A_MAX,
	NVS_THRESH_A_CLEAR,
	__NVS_THRESH_A_LAST
};
#define NVS_THRESH_A_MAX_ATTR (__NVS_THRESH_A_LAST - 1)

enum nvs_dmabuf_step {
	NVS_DMABUF_STEP_GET,		/* dma_buf_get() */
	NVS_DMABUF_STEP_ATTACH,		/* dma_buf_dynamic_attach() */
	NVS_DMABUF_STEP_MAP,		/* dma_buf_map_attachment() */
	NVS_DMABUF_STEP_FENCE,		/* waiting for the exporter's fences */
	NVS_DMABUF_STEP_DONE,		/* mapped, walked, unmapped */
	__NVS_DMABUF_STEP_LAST
};

enum nvs_dmabuf_verdict {
	NVS_DMABUF_VERDICT_UNKNOWN,	/* not mapped */
	NVS_DMABUF_VERDICT_BAR1,	/* every segment inside the GPU's BAR1 */
	NVS_DMABUF_VERDICT_SYSTEM_RAM,	/* every segment in system memory */
	NVS_DMABUF_VERDICT_ELSEWHERE,	/* outside BAR1 and not system RAM */
	NVS_DMABUF_VERDICT_MIXED,	/* some of each */
	__NVS_DMABUF_VERDICT_LAST
};

/*
 * How the importer would have reached the buffer: the address kind the
 * exporter put into sg_dma_address(), as the probe classified it.
 */
enum nvs_dmabuf_addr {
	NVS_DMABUF_ADDR_UNKNOWN,	/* not mapped */
	NVS_DMABUF_ADDR_DIRECT,		/* no translation (no IOMMU, pass-through) */
	NVS_DMABUF_ADDR_IOVA,		/* IOVAs of the importer's translating domain */
	NVS_DMABUF_ADDR_BUS,		/* PCI bus addresses marked so (P2PDMA) */
	/* raw BAR1 addresses that bypass the importer's translating domain */
	NVS_DMABUF_ADDR_UNTRANSLATED,
	NVS_DMABUF_ADDR_MIXED,		/* some of each */
	__NVS_DMABUF_ADDR_LAST
};

enum nvs_p2p_state {
	NVS_P2P_UNKNOWN,		/* kernel without CONFIG_PCI_P2PDMA */
	NVS_P2P_ALLOWED,		/* pci_p2pdma_distance() >= 0 */
	NVS_P2P_REFUSED,		/* pci_p2pdma_distance() < 0 */
	NVS_P2P_NOT_APPLICABLE,		/* no GPU to compare against */
	__NVS_P2P_LAST
};

enum nvs_dmabuf_attr {
	NVS_DMABUF_A_UNSPEC,
	NVS_DMABUF_A_STEP,
	NVS_DMABUF_A_ERRNO,
	NVS_DMABUF_A_EXPORTER,
	NVS_DMABUF_A_IMPORTER,
	NVS_DMABUF_A_SIZE,
	NVS_DMABUF_A_NENTS,
	NVS_DMABUF_A_MAPPED,
	NVS_DMABUF_A_SEG_MIN,
	NVS_DMABUF_A_SEG_MAX,
	NVS_DMABUF_A_VERDICT,
	NVS_DMABUF_A_BAR1_START,
	NVS_DMABUF_A_BAR1_LEN,
	NVS_DMABUF_A_P2P,
	NVS_DMABUF_A_P2P_DISTANCE,
	NVS_DMABUF_A_PAD,
	NVS_DMABUF_A_ADDR,
	NVS_DMABUF_A_MOVED,
	__NVS_DMABUF_A_LAST
};
#define NVS_DMABUF_A_MAX (__NVS_DMABUF_A_LAST - 1)

#endif /* _UAPI_NVSIDECAR_H */
