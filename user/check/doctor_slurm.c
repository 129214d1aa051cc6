// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The Slurm hang before a job starts (docs/slurm-hwloc.md), found on the
 * node before any job hangs. slurmstepd's PMIx plugin loads hwloc; hwloc's
 * gl plugin opens X displays :0 to :9 whether or not DISPLAY is set
 * (HWLOC_GL_SERVER_MAX is 10 in hwloc's topology-gl.c); where
 * /tmp/.X11-unix/X<n> does not exist, libxcb falls back to TCP
 * localhost:6000+n (X_TCP_PORT), and a process listening there that does
 * not speak X (Megatron's examples use MASTER_PORT=6000 for the TCPStore)
 * never answers: hwloc waits in poll() for ever, slurmd and slurmstepd
 * with it, and no log says why. HWLOC_COMPONENTS=-gl in slurmd's
 * environment keeps the plugin out (hwloc's documentation of
 * HWLOC_COMPONENTS). Every path is read under the doctor's root.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "check/doctor.h"

#define add(...) nvs_check_add(__VA_ARGS__)
#define fix(...) nvs_check_fix(__VA_ARGS__)

#define PORT_FIRST 6000
#define DISPLAYS 10
#define DROPIN "/etc/systemd/system/slurmd.service.d/nvsidecar-hwloc.conf"

/* Where distributions install hwloc's plugins (Debian multiarch, Fedora/RHEL lib64, source builds). */
static const char *const plugin_globs[] = {
	"/usr/lib/*/hwloc/hwloc_gl.so",
	"/usr/lib64/hwloc/hwloc_gl.so",
	"/usr/lib/hwloc/hwloc_gl.so",
	"/usr/local/lib/hwloc/hwloc_gl.so",
};

static const char *const units[] = {
	"/etc/systemd/system/slurmd.service",
	"/usr/lib/systemd/system/slurmd.service",
	"/lib/systemd/system/slurmd.service",
};

struct slurm_state {
	char plugin[4096];	/* the gl plugin found, "" none */
	int pid;		/* slurmd's, 0 none */
	int environ_read;	/* 1 read, 0 no process, -errno unreadable */
	bool run_gl_off;	/* its environment has HWLOC_COMPONENTS with -gl */
	char conf_gl_off[4096];	/* the unit, drop-in or EnvironmentFile that sets it; "" none */
	bool unit;		/* a slurmd unit exists */
	char listen[128];	/* "6000 (no /tmp/.X11-unix/X0)" ... */
	int ports;		/* listening ports that a display probe would reach */
};

/* globbed paths are shown and reused without the root prefix */
static size_t root_len(const struct nvs_doctor_opts *o)
{
	return o->root && *o->root ? strlen(o->root) : 0;
}

/* HWLOC_COMPONENTS is a comma-separated list; "-gl" excludes the gl component. */
static bool value_excludes_gl(const char *v, size_t len)
{
	while (len) {
		size_t n = 0;

		while (n < len && v[n] != ',')
			n++;
		if (n == 3 && !strncmp(v, "-gl", 3))
			return true;
		v += n;
		len -= n;
		if (len) {
			v++;
			len--;
		}
	}
	return false;
}

/* "HWLOC_COMPONENTS=..." somewhere in s (an environ entry or a unit's Environment= line). */
static bool text_excludes_gl(const char *s)
{
	const char *k = "HWLOC_COMPONENTS=";

	for (const char *p = strstr(s, k); p; p = strstr(p + 1, k)) {
		const char *v = p + strlen(k);

		if (p != s && !isspace((unsigned char)p[-1]) && p[-1] != '"' && p[-1] != '=' && p[-1] != '\'')
			continue;
		if (value_excludes_gl(v, strcspn(v, " \t\"'\n")))
			return true;
	}
	return false;
}

static void find_plugin(const struct nvs_doctor_opts *o, struct slurm_state *s)
{
	char pat[4096];

	for (size_t i = 0; i < sizeof(plugin_globs) / sizeof(plugin_globs[0]) && !s->plugin[0]; ++i) {
		glob_t g;

		nvs_doctor_path(o, plugin_globs[i], pat, sizeof(pat));
		if (!glob(pat, 0, NULL, &g) && g.gl_pathc)
			snprintf(s->plugin, sizeof(s->plugin), "%s", g.gl_pathv[0] + root_len(o));
		globfree(&g);
	}
}

static void find_slurmd(const struct nvs_doctor_opts *o, struct slurm_state *s)
{
	char path[4096], file[4096], rel[64], comm[32];
	struct dirent *e;
	DIR *d = opendir(nvs_doctor_path(o, "/proc", path, sizeof(path)));

	if (!d)
		return;
	while ((e = readdir(d)) && !s->pid) {
		FILE *f;
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		snprintf(rel, sizeof(rel), "/proc/%ld/comm", pid);
		f = fopen(nvs_doctor_path(o, rel, file, sizeof(file)), "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "slurmd\n"))
			s->pid = (int)pid;
		fclose(f);
	}
	closedir(d);
}

static void read_environ(const struct nvs_doctor_opts *o, struct slurm_state *s)
{
	char rel[64], path[4096], buf[65536];
	size_t n;
	FILE *f;

	if (!s->pid)
		return;
	snprintf(rel, sizeof(rel), "/proc/%d/environ", s->pid);
	f = fopen(nvs_doctor_path(o, rel, path, sizeof(path)), "r");
	if (!f) {
		s->environ_read = -errno;
		return;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	s->environ_read = 1;
	/* NUL-separated entries */
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (!strncmp(buf + i, "HWLOC_COMPONENTS=", 17) &&
		    value_excludes_gl(buf + i + 17, strlen(buf + i + 17)))
			s->run_gl_off = true;
}

static void scan_file(const struct nvs_doctor_opts *o, const char *file, bool unit, struct slurm_state *s,
		      int depth);

/* A unit's EnvironmentFile=[-]PATH, read as KEY=VALUE lines. */
static void scan_envfile(const struct nvs_doctor_opts *o, const char *line, struct slurm_state *s, int depth)
{
	char rel[4096];
	const char *v = line + strlen("EnvironmentFile=");

	if (*v == '-')
		v++;
	snprintf(rel, sizeof(rel), "%.*s", (int)strcspn(v, " \t\n"), v);
	if (rel[0] == '/')
		scan_file(o, rel, false, s, depth + 1);
}

/* file is root-relative; unit files also name EnvironmentFiles. */
static void scan_file(const struct nvs_doctor_opts *o, const char *file, bool unit, struct slurm_state *s,
		      int depth)
{
	char path[4096], line[4096];
	FILE *f;

	if (depth > 2 || s->conf_gl_off[0])
		return;
	f = fopen(nvs_doctor_path(o, file, path, sizeof(path)), "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && !s->conf_gl_off[0]) {
		const char *l = line + strspn(line, " \t");

		if (unit && !strncmp(l, "EnvironmentFile=", 16))
			scan_envfile(o, l, s, depth);
		else if ((!unit || !strncmp(l, "Environment=", 12)) && *l != '#' && text_excludes_gl(l))
			snprintf(s->conf_gl_off, sizeof(s->conf_gl_off), "%s", file);
	}
	fclose(f);
}

static void scan_units(const struct nvs_doctor_opts *o, struct slurm_state *s)
{
	char path[4096], pat[4096];
	struct stat st;
	glob_t g;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); ++i) {
		if (stat(nvs_doctor_path(o, units[i], path, sizeof(path)), &st))
			continue;
		s->unit = true;
		scan_file(o, units[i], true, s, 0);
		break;
	}
	nvs_doctor_path(o, "/etc/systemd/system/slurmd.service.d/*.conf", pat, sizeof(pat));
	if (!glob(pat, 0, NULL, &g))
		for (size_t i = 0; i < g.gl_pathc; ++i)
			scan_file(o, g.gl_pathv[i] + root_len(o), true, s, 0);
	globfree(&g);
}

/*
 * Whether a connect to localhost reaches a socket bound to this address:
 * the wildcard or loopback (libxcb tries 127.0.0.1 and ::1). The kernel
 * prints each 32-bit word of the address as the host stores it (%08X of
 * the raw word, tcp4_seq_show/tcp6_seq_show), so scanning a word back
 * gives the bytes as they were in memory.
 */
static bool reaches_localhost(const char *hex)
{
	size_t len = strlen(hex);
	uint32_t w[4];
	struct in6_addr a6;
	struct in_addr a4;

	if (len == 8 && sscanf(hex, "%8x", &w[0]) == 1) {
		memcpy(&a4, &w[0], 4);
		return !a4.s_addr || ntohl(a4.s_addr) >> 24 == 127;
	}
	if (len != 32 || sscanf(hex, "%8x%8x%8x%8x", &w[0], &w[1], &w[2], &w[3]) != 4)
		return false;
	memcpy(&a6, w, 16);
	if (IN6_IS_ADDR_UNSPECIFIED(&a6) || IN6_IS_ADDR_LOOPBACK(&a6))
		return true;
	return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
}

/* Listening sockets on 6000..6009 in /proc/net/tcp and tcp6 ("0A" is TCP_LISTEN). */
static void scan_listeners(const struct nvs_doctor_opts *o, struct slurm_state *s)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	bool seen[DISPLAYS] = { false };

	for (size_t i = 0; i < 2; ++i) {
		char path[4096], line[512];
		FILE *f = fopen(nvs_doctor_path(o, files[i], path, sizeof(path)), "r");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char local[64], remote[64], st[8];
			unsigned int port;
			char *colon;

			if (sscanf(line, " %*s %63s %63s %7s", local, remote, st) != 3 || strcmp(st, "0A"))
				continue;
			colon = strrchr(local, ':');
			if (!colon || sscanf(colon + 1, "%x", &port) != 1)
				continue;
			*colon = 0;
			if (!reaches_localhost(local))
				continue;
			if (port >= PORT_FIRST && port < PORT_FIRST + DISPLAYS)
				seen[port - PORT_FIRST] = true;
		}
		fclose(f);
	}
	for (int n = 0; n < DISPLAYS; ++n) {
		char rel[64], path[4096];
		struct stat st;

		if (!seen[n])
			continue;
		snprintf(rel, sizeof(rel), "/tmp/.X11-unix/X%d", n);
		/* an X server's socket answers the probe for :n before TCP is tried */
		if (!stat(nvs_doctor_path(o, rel, path, sizeof(path)), &st))
			continue;
		s->ports++;
		snprintf(s->listen + strlen(s->listen), sizeof(s->listen) - strlen(s->listen), "%s%d",
			 s->listen[0] ? ", " : "", PORT_FIRST + n);
	}
}

static void fix_text(struct nvs_checks *c)
{
	fix(c, "Put HWLOC_COMPONENTS=-gl in slurmd's environment: write %s with the two lines `[Service]' and `Environment=HWLOC_COMPONENTS=-gl', then `systemctl daemon-reload && systemctl restart slurmd' (or add the line to /etc/default/slurmd, which slurmd.service reads). Why: docs/slurm-hwloc.md",
	    DROPIN);
}

void nvs_doctor_slurm(struct nvs_checks *c, const struct nvs_doctor_opts *o)
{
	struct slurm_state s = { 0 };

	find_slurmd(o, &s);
	scan_units(o, &s);
	if (!s.pid && !s.unit) {
		add(c, CK_SKIP, "slurm", "slurm-hwloc-gl", "no slurmd on this node (no process, no slurmd.service)");
		return;
	}
	find_plugin(o, &s);
	if (!s.plugin[0]) {
		add(c, CK_OK, "slurm", "slurm-hwloc-gl",
		    "hwloc's gl plugin (hwloc_gl.so) is not installed: slurmstepd cannot hang probing X displays");
		return;
	}
	read_environ(o, &s);
	if (s.run_gl_off || (s.environ_read != 1 && s.conf_gl_off[0])) {
		add(c, CK_OK, "slurm", "slurm-hwloc-gl", "slurmd runs with HWLOC_COMPONENTS=-gl (%s): %s is not loaded",
		    s.run_gl_off ? "its environment" : s.conf_gl_off, s.plugin);
		return;
	}
	if (s.environ_read == 1 && s.conf_gl_off[0]) {
		add(c, CK_WARN, "slurm", "slurm-hwloc-gl",
		    "%s sets HWLOC_COMPONENTS=-gl but the running slurmd (pid %d) was started without it",
		    s.conf_gl_off, s.pid);
		fix(c, "`systemctl daemon-reload && systemctl restart slurmd' (no job is lost: running steps keep running)");
		return;
	}
	scan_listeners(o, &s);
	if (s.ports) {
		add(c, CK_FAIL, "slurm", "slurm-hwloc-gl",
		    "the next job step will hang: %s is installed, slurmd%s lacks HWLOC_COMPONENTS=-gl, and TCP %s listen%s with no X socket in /tmp/.X11-unix, where hwloc's display probe connects and waits for ever",
		    s.plugin, s.environ_read < 0 ? "'s unit" : "", s.listen, s.ports > 1 ? "" : "s");
		fix_text(c);
		return;
	}
	add(c, CK_WARN, "slurm", "slurm-hwloc-gl",
	    "%s is installed and slurmd%s lacks HWLOC_COMPONENTS=-gl: a job step hangs whenever a process listens on TCP 6000-6009 (MASTER_PORT=6000 in Megatron's examples)%s",
	    s.plugin, s.environ_read < 0 ? "'s unit" : "",
	    s.environ_read < 0 ? "; slurmd's own environment was not readable (run doctor as root)" : "");
	fix_text(c);
}
