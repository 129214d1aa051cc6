/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CMD_SUBCOMMANDS_H
#define CMD_SUBCOMMANDS_H

/*
 * One file per subcommand, each exporting X_main(). They are weak so that a
 * helper built without one backend (say, no rdma-core) still links; the
 * dispatcher lists only the subcommands that are present.
 */
#define NVS_SUBCOMMAND(name) \
	int name##_main(int argc, const char *argv[]) __attribute__((weak))

NVS_SUBCOMMAND(status);
NVS_SUBCOMMAND(thermal);
NVS_SUBCOMMAND(set);
NVS_SUBCOMMAND(events);
NVS_SUBCOMMAND(libcuda);
NVS_SUBCOMMAND(dmabuf);
NVS_SUBCOMMAND(topo);
NVS_SUBCOMMAND(p2p);
NVS_SUBCOMMAND(nccl_check);
NVS_SUBCOMMAND(rdma);
NVS_SUBCOMMAND(doctor);
NVS_SUBCOMMAND(idle_fix);

#endif
