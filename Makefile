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

.PHONY: all module clean-module user test demo bench deps clean
