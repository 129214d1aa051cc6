# SPDX-License-Identifier: GPL-2.0
#
# Top-level build. `make` builds the module for KVER (default: the running
# kernel) and the userspace helper. `make test` installs what the tests need
# and runs every suite; `make demo` boots a simulated RTX 5090.

VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build
BUILD ?= build
# The module builds in a per-kernel copy so that several kernels can be
# built side by side (the tests do); DKMS passes MODDIR=. to build in place.
MODDIR ?= $(BUILD)/kmod-$(KVER)
KSRC := Kbuild dkms.conf $(wildcard kmod/*.c kmod/*.h kmod/*.sh kmod/uapi/*.h kmod/selftest/*.c)

export VERSION

all: module user

module:
	@test -d $(KDIR) || { echo "No kernel build tree at $(KDIR): install linux-headers-$(KVER) or pass KVER=/KDIR=" >&2; exit 1; }
ifneq ($(MODDIR),.)
	@mkdir -p $(MODDIR)
	@cp -p --parents $(KSRC) $(MODDIR)/
endif
	$(MAKE) -C $(KDIR) M=$(abspath $(MODDIR)) $(if $(W),W=$(W)) $(if $(C),C=$(C)) $(if $(CHECK),CHECK=$(CHECK)) modules

clean-module:
	$(MAKE) -C $(KDIR) M=$(abspath $(MODDIR)) clean

user:
	$(MAKE) -C user

# What a change must pass before review, in a few minutes and without a VM:
# the helper built with warnings as errors and its unit tests under the
# sanitizers, checkpatch over kmod/, user/ and tests/unit/ (scripts/style.sh),
# the YNL spec against the uapi and genl.c's policies (scripts/ynl-check),
# the floors of user/ over its includes and calls (scripts/floors.sh),
# and the module for KVER built with W=1, warnings as errors, and sparse.
CHECK_O := $(abspath $(BUILD))/check
check:
	$(MAKE) -C user O=$(CHECK_O)/user WERROR=1
	$(MAKE) -C user O=$(CHECK_O)/user-asan WERROR=1 ASAN=1 check
	scripts/floors.sh $(CHECK_O)/user
	scripts/style.sh
	scripts/ynl-check
	$(MAKE) module W=1 KCFLAGS=-Werror MODDIR=$(CHECK_O)/kmod-$(KVER) \
		$(if $(shell command -v sparse),C=2 CHECK="sparse -Wsparse-error")

test:
	scripts/deps.sh
	$(MAKE) user
	tests/run

demo:
	scripts/deps.sh
	$(MAKE) user
	tests/vm/demo.sh

bench:
	scripts/deps.sh
	$(MAKE) user
	bench/run

deps:
	scripts/deps.sh

clean:
	rm -rf $(BUILD)
	$(MAKE) -C user clean

# install, uninstall, dkms-install, dkms-uninstall, deb and rpm
-include scripts/install.mk

.PHONY: all module clean-module user check test demo bench deps clean
