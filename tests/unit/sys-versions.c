// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Unit tests of the version readers' pure parts (sys/nvdriver.c,
 * sys/versions.c) and of the known-issues version order
 * (check/known_issues.c), on the formats the components print: both
 * nvidia-smi header formats, NCCL's version codes, the libraries' file
 * names, /proc/driver/nvidia/params (nv-procfs.c's layout). Prints one
 * line per failed check and exits 1 if there was any.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/known_issues.h"
#include "sys/nvdriver.h"
#include "sys/versions.h"

static int failures, checks;

#define CHECK(cond, ...) do {						\
	++checks;							\
	if (!(cond)) {							\
		++failures;						\
		printf("FAIL %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

static void smi(const char *line, bool ok, const char *drv, const char *cuda)
{
	char d[32], c[32];
	bool got = nvs_nvdriver_smi_header(line, d, sizeof(d), c, sizeof(c));

	CHECK(got == ok && !strcmp(d, drv) && !strcmp(c, cuda), "smi `%s': %d `%s' `%s'", line, got, d, c);
}

static void code(int v, const char *want)
{
	char s[32];
	bool ok = nvs_version_nccl_code(v, s, sizeof(s));

	CHECK(want ? ok && !strcmp(s, want) : !ok, "nccl code %d: `%s'", v, ok ? s : "(false)");
}

static void name(bool (*fn)(const char *, char *, size_t), const char *path, const char *want)
{
	char s[32];
	bool ok = fn(path, s, sizeof(s));

	CHECK(want ? ok && !strcmp(s, want) : !ok && !s[0], "name %s: `%s'", path, s);
}

int main(void)
{
	char buf[256], path[] = "/tmp/nvs-unit-params.XXXXXX";
	FILE *f;
	int fd;

	/* nvidia-smi's header: up to 600 and from 610 (KMD/CUDA UMD), and before CUDA was shown */
	smi("| NVIDIA-SMI 590.44.01              Driver Version: 590.44.01      CUDA Version: 13.1     |", true,
	    "590.44.01", "13.1");
	smi("| NVIDIA-SMI 610.43.03              KMD Version: 610.43.03     CUDA UMD Version: 13.3     |", true,
	    "610.43.03", "13.3");
	smi("| NVIDIA-SMI 331.62     Driver Version: 331.62         |", true, "331.62", "");
	smi("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |", false, "",
	    "");
	smi("| NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver |", false, "", "");

	code(22703, "2.27.3");
	code(21903, "2.19.3");
	code(2408, "2.4.8");	/* the old encoding, up to 2.8 */
	code(0, NULL);

	name(nvs_version_nccl_name, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.27.5", "2.27.5");
	name(nvs_version_nccl_name, "/usr/lib/x86_64-linux-gnu/libnccl.so.2", NULL);
	name(nvs_version_nccl_name, "libnccl-net.so.2.1.0", NULL);
	name(nvs_version_rdma_core_name, "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0", "44.0");
	name(nvs_version_rdma_core_name, "/usr/lib64/libibverbs.so.1.14.50.0", "50.0");
	name(nvs_version_rdma_core_name, "/usr/lib/x86_64-linux-gnu/libibverbs.so.1", NULL);
	name(nvs_version_rdma_core_name, "/usr/lib/libibverbs.so.1.14", NULL);

	CHECK(nvs_nvdriver_registry_has("RMForceStaticBar1=1;PeerMappingOverride=1", "PeerMappingOverride", "0x1"),
	      "registry: 0x1 is 1");
	CHECK(!nvs_nvdriver_registry_has("RMForceStaticBar1=1;PeerMappingOverride=1", "PeerMappingOverride", "2"),
	      "registry: 1 is not 2");
	CHECK(!nvs_nvdriver_registry_has("RMForceStaticBar1=1", "RMForceStaticBar", "1"), "registry: a prefix is not the key");
	CHECK(!nvs_nvdriver_registry_has("", "RMForceStaticBar1", "1"), "registry: empty");

	/* /proc/driver/nvidia/params as nv_procfs_read_params() prints it */
	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	CHECK(f, "temporary file");
	if (f) {
		fputs("ResmanDebugLevel: 4294967295\nRmLogonRC: 1\nRegistryDwords: \"RMForceStaticBar1=1;PeerMappingOverride=1\"\n"
		      "RegistryDwordsPerDevice: \"\"\nRmMsg: \"\"\n", f);
		fclose(f);
		CHECK(!nvs_nvdriver_registry(path, buf, sizeof(buf)) &&
		      !strcmp(buf, "RMForceStaticBar1=1;PeerMappingOverride=1"), "params: `%s'", buf);
		f = fopen(path, "w");
		if (f) {
			fputs("ResmanDebugLevel: 4294967295\nRegistryDwords: \"\"\nRegistryDwordsPerDevice: \"pci=0000:01:00.0;X=1\"\n",
			      f);
			fclose(f);
		}
		CHECK(!nvs_nvdriver_registry(path, buf, sizeof(buf)) && !buf[0], "params, no overrides: `%s'", buf);
		f = fopen(path, "w");
		if (f)
			fclose(f);
		CHECK(nvs_nvdriver_registry(path, buf, sizeof(buf)) == -22, "params without the line");
		unlink(path);
	}

	CHECK(nvs_ki_vercmp("6.12.118+deb12-amd64", "6.4") > 0, "6.12.118+deb12 > 6.4");
	CHECK(nvs_ki_vercmp("6.1.0-28-amd64", "6.4") < 0, "6.1.0-28 < 6.4");
	CHECK(nvs_ki_vercmp("6.4", "6.4.0") == 0, "6.4 == 6.4.0");
	CHECK(nvs_ki_vercmp("2.27.3", "2.27.5") < 0, "2.27.3 < 2.27.5");
	CHECK(nvs_ki_vercmp("10.0", "9.99") > 0, "10.0 > 9.99");

	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
