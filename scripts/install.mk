# SPDX-License-Identifier: GPL-2.0
#
# Installation and packaging, included by the top-level Makefile (which sets
# VERSION from dkms.conf, KVER and BUILD).
#
#   make install [DESTDIR=] [PREFIX=/usr/local]   everything below, plus
#                                   `dkms add` when DESTDIR is empty
#     install-dkms     DKMS source tree (install-dkms-src), initramfs-tools hook, dracut module,
#                      modules-load.d, modprobe.d example, /etc/default
#     install-helper   nvsidecar, libnvsidecar, headers, man page,
#                      completion, systemd units, /etc/cron.d/nvsidecar and
#                      its runner, /etc/nvsidecar/doctor.conf,
#                      the Slurm health check, NHC check, Prometheus rules
#                      and Grafana dashboard, the doctor's known-issues
#                      table and its page
#   make uninstall    removes exactly what install recorded in its manifest
#   make dkms-install KVER=...     add, build and install for one kernel
#   make dkms-uninstall KVER=...   remove for one kernel (and the source tree
#                                  once no kernel uses it)
#   make deb          nvsidecar-dkms and nvsidecar .debs in $(BUILD)/deb
#   make rpm          source and binary RPMs in $(BUILD)/rpm (rpmbuild)
#   make rpm-lint     rpmlint on the spec
#
# Every installed file that names an installed path gets it substituted
# (@BINDIR@, @LIBEXECDIR@, @DATADIR@, @EXAMPLEDIR@, @SYSCONFDIR@ by sub), so
# the examples, the man page and the units agree with whichever route
# installed them: the packages, `make install', `make install PREFIX=/usr'.
#
# Paths the kernel tooling reads (/usr/src, initramfs-tools, dracut) do not
# follow PREFIX: those programs look nowhere else.

PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/nvsidecar
EXAMPLEDIR ?= $(DOCDIR)/examples
LIBEXECDIR ?= $(PREFIX)/lib/nvsidecar
COMPLETIONDIR ?= $(DATADIR)/bash-completion/completions
UNITDIR ?= $(PREFIX)/lib/systemd/system
MODULESLOADDIR ?= $(PREFIX)/lib/modules-load.d
DEFAULTDIR ?= $(SYSCONFDIR)/default
DKMSSRCDIR ?= /usr/src/nvsidecar-$(VERSION)
INITRAMFSDIR ?= /usr/share/initramfs-tools
DRACUTDIR ?= /usr/lib/dracut/modules.d
# Where the Prometheus alerts' runbook_url points: the alerts' README.md as
# installed, or a site's own published copy (docs/prometheus/README.md).
RUNBOOK_URL ?= file://$(DATADIR)/nvsidecar/prometheus/README.md
# Empty: write no manifest (packages have their own).
NVS_MANIFEST ?= $(DATADIR)/nvsidecar/install-manifest
# libnvsidecar's soname number: user/Makefile's SOVER is the one place it is set.
NVS_SOVER := $(shell sed -n 's/^SOVER := //p' user/Makefile)
# Where `make user` put the helper (user/Makefile's O=).
USER_O ?= user
DKMS ?= dkms
DEBBUILDFLAGS ?= -b
# Files the module build needs (the top-level Makefile's KSRC plus itself).
NVS_DKMS_FILES = Makefile $(KSRC)

# inst MODE SRC DST (DST without DESTDIR): install one file and record it,
# and every directory it had to create, in the manifest being built ($$man).
nvs_inst_fns = set -e; mkdir -p "$(DESTDIR)/"; man=$$(mktemp); trap 'rm -f "$$man"' EXIT; if [ -n "$(NVS_MANIFEST)" ] && [ -f "$(DESTDIR)$(NVS_MANIFEST)" ]; then cp "$(DESTDIR)$(NVS_MANIFEST)" "$$man"; fi; mkd() { p=$$1; new=; while [ "$$p" != / ] && [ ! -d "$(DESTDIR)$$p" ]; do new="$$p $$new"; p=$$(dirname "$$p"); done; for d in $$new; do mkdir "$(DESTDIR)$$d"; echo "d $$d" >>"$$man"; done; }; inst() { mkd "$$(dirname "$$3")"; install -m "$$1" "$$2" "$(DESTDIR)$$3"; echo "f $$3" >>"$$man"; }; conf() { mkd "$$(dirname "$$3")"; install -m "$$1" "$$2" "$(DESTDIR)$$3"; echo "c $$(sha256sum <"$(DESTDIR)$$3" | cut -d' ' -f1) $$3" >>"$$man"; }; lnk() { mkd "$$(dirname "$$2")"; ln -sfn "$$1" "$(DESTDIR)$$2"; echo "f $$2" >>"$$man"; }; sub() { t=$$(mktemp); sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@LIBEXECDIR@|$(LIBEXECDIR)|g' -e 's|@DATADIR@|$(DATADIR)|g' -e 's|@EXAMPLEDIR@|$(EXAMPLEDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' "$$2" >"$$t"; if [ "$${4:-}" = conf ]; then conf "$$1" "$$t" "$$3"; else inst "$$1" "$$t" "$$3"; fi; rm -f "$$t"; }; save_manifest() { [ -n "$(NVS_MANIFEST)" ] || return 0; mkd "$$(dirname "$(NVS_MANIFEST)")"; echo "f $(NVS_MANIFEST)" >>"$$man"; awk '!seen[$$0]++' "$$man" >"$(DESTDIR)$(NVS_MANIFEST)"; chmod 0644 "$(DESTDIR)$(NVS_MANIFEST)"; }

# One after the other: both append to the same manifest.
install:
	@$(MAKE) --no-print-directory install-dkms
	@$(MAKE) --no-print-directory install-helper
ifeq ($(DESTDIR),)
	@if [ -z "$$($(DKMS) status -m nvsidecar -v $(VERSION))" ]; then \
		$(DKMS) add -m nvsidecar -v $(VERSION); \
	else \
		echo "nvsidecar/$(VERSION) is already registered with DKMS"; \
	fi
	@echo "Next: dkms install nvsidecar/$(VERSION) -k <release> for each kernel (or make dkms-install KVER=...)"
endif

install-dkms-src:
	@test -n "$(VERSION)" || { echo "No PACKAGE_VERSION in dkms.conf" >&2; exit 1; }
	@$(nvs_inst_fns); \
	for f in $(NVS_DKMS_FILES); do inst 0644 "$$f" "$(DKMSSRCDIR)/$$f"; done; \
	save_manifest

install-dkms: install-dkms-src
	@$(nvs_inst_fns); \
	inst 0755 scripts/initramfs-tools/nvsidecar "$(INITRAMFSDIR)/hooks/nvsidecar"; \
	inst 0755 scripts/dracut/90nvsidecar/module-setup.sh "$(DRACUTDIR)/90nvsidecar/module-setup.sh"; \
	inst 0644 scripts/modules-load.d/nvsidecar.conf "$(MODULESLOADDIR)/nvsidecar.conf"; \
	inst 0644 scripts/modprobe.d/nvsidecar.conf.example "$(EXAMPLEDIR)/modprobe.d-nvsidecar.conf"; \
	if [ -e "$(DESTDIR)$(DEFAULTDIR)/nvsidecar" ]; then \
		echo "Keeping the existing $(DESTDIR)$(DEFAULTDIR)/nvsidecar"; \
	else \
		conf 0644 scripts/initramfs-tools/nvsidecar.default "$(DEFAULTDIR)/nvsidecar"; \
	fi; \
	save_manifest

install-helper:
	@test -x $(USER_O)/nvsidecar || { echo "No $(USER_O)/nvsidecar: run \`make user' first" >&2; exit 1; }
	@$(nvs_inst_fns); \
	inst 0755 $(USER_O)/nvsidecar "$(BINDIR)/nvsidecar"; \
	inst 0755 $(USER_O)/libnvsidecar.so.$(NVS_SOVER) "$(LIBDIR)/libnvsidecar.so.$(NVS_SOVER)"; \
	lnk libnvsidecar.so.$(NVS_SOVER) "$(LIBDIR)/libnvsidecar.so"; \
	inst 0644 $(USER_O)/libnvsidecar.a "$(LIBDIR)/libnvsidecar.a"; \
	inst 0644 user/sys/libnvsidecar/libnvsidecar.h "$(INCLUDEDIR)/libnvsidecar.h"; \
	inst 0644 kmod/uapi/nvsidecar.h "$(INCLUDEDIR)/nvsidecar.h"; \
	if [ -f docs/nvsidecar.8 ]; then sub 0644 docs/nvsidecar.8 "$(MANDIR)/man8/nvsidecar.8"; \
	else echo "No docs/nvsidecar.8 yet: installing no man page"; fi; \
	if [ -f scripts/completion/nvsidecar.bash ]; then \
		inst 0644 scripts/completion/nvsidecar.bash "$(COMPLETIONDIR)/nvsidecar"; \
	else echo "No scripts/completion/nvsidecar.bash yet: installing no completion"; fi; \
	for u in scripts/systemd/*.service scripts/systemd/*.timer; do \
		sub 0644 "$$u" "$(UNITDIR)/$${u##*/}"; done; \
	sub 0755 scripts/cron/nvsidecar-cron "$(LIBEXECDIR)/nvsidecar-cron"; \
	if [ -e "$(DESTDIR)$(SYSCONFDIR)/cron.d/nvsidecar" ]; then \
		echo "Keeping the existing $(DESTDIR)$(SYSCONFDIR)/cron.d/nvsidecar"; \
	else \
		sub 0644 scripts/cron/nvsidecar.cron "$(SYSCONFDIR)/cron.d/nvsidecar" conf; \
	fi; \
	if [ -e "$(DESTDIR)$(SYSCONFDIR)/nvsidecar/doctor.conf" ]; then \
		echo "Keeping the existing $(DESTDIR)$(SYSCONFDIR)/nvsidecar/doctor.conf"; \
	else \
		conf 0644 scripts/nvsidecar/doctor.conf "$(SYSCONFDIR)/nvsidecar/doctor.conf"; \
	fi; \
	inst 0644 scripts/nvsidecar/doctor.conf "$(EXAMPLEDIR)/doctor.conf"; \
	sub 0755 scripts/slurm/nvsidecar-healthcheck "$(LIBEXECDIR)/nvsidecar-healthcheck"; \
	sub 0644 scripts/slurm/nvsidecar.nhc "$(EXAMPLEDIR)/nvsidecar.nhc"; \
	sub 0644 scripts/slurm/slurm.conf.example "$(EXAMPLEDIR)/slurm.conf"; \
	sub 0644 scripts/nvsidecar/known-issues.tsv "$(DATADIR)/nvsidecar/known-issues.tsv"; \
	inst 0644 docs/known-issues.md "$(DOCDIR)/known-issues.md"; \
	for f in nvsidecar.rules.yml nvsidecar.rules.test.yml; do \
		t=$$(mktemp); sed 's|@RUNBOOK_URL@|$(RUNBOOK_URL)|g' "docs/prometheus/$$f" >"$$t"; \
		inst 0644 "$$t" "$(DATADIR)/nvsidecar/prometheus/$$f"; rm -f "$$t"; done; \
	for f in nvsidecar-dashboard.json README.md; do \
		inst 0644 "docs/prometheus/$$f" "$(DATADIR)/nvsidecar/prometheus/$$f"; done; \
	save_manifest
ifeq ($(DESTDIR),)
	-@ldconfig
endif

# Files first, then the directories install created, deepest first; a
# directory that now holds something else stays. A settings file ("c" in the
# manifest, with its hash at install) goes only if unchanged, as dpkg treats
# conffiles: an admin's edits survive `make uninstall'.
uninstall:
	@m="$(DESTDIR)$(NVS_MANIFEST)"; \
	if [ -z "$(NVS_MANIFEST)" ] || [ ! -f "$$m" ]; then echo "No install manifest at $$m: nothing to uninstall" >&2; exit 1; fi; \
	if [ -z "$(DESTDIR)" ] && [ -n "$$($(DKMS) status -m nvsidecar 2>/dev/null)" ]; then \
		for v in $$($(DKMS) status -m nvsidecar | sed -n 's|^nvsidecar/\([^,:]*\).*|\1|p' | sort -u); do \
			if grep -qx "f /usr/src/nvsidecar-$$v/dkms.conf" "$$m"; then $(DKMS) remove -m nvsidecar -v "$$v" --all; fi; \
		done; \
	fi; \
	list=$$(cat "$$m"); \
	echo "$$list" | sed -n 's/^f //p' | while read -r f; do rm -f "$(DESTDIR)$$f"; done; \
	echo "$$list" | sed -n 's/^c //p' | while read -r h f; do \
		[ -e "$(DESTDIR)$$f" ] || continue; \
		if [ "$$(sha256sum <"$(DESTDIR)$$f" | cut -d' ' -f1)" = "$$h" ]; then rm -f "$(DESTDIR)$$f"; \
		else echo "Keeping $(DESTDIR)$$f: changed since install (your settings); delete it yourself if you no longer want it"; fi; \
	done; \
	echo "$$list" | sed -n 's/^d //p' | sort -r | while read -r d; do rmdir "$(DESTDIR)$$d" 2>/dev/null || echo "Keeping $(DESTDIR)$$d: not empty"; done
ifeq ($(DESTDIR),)
	-@ldconfig
endif

# The source tree is the one `make install-dkms` writes; a failed build is
# removed again so that DKMS never keeps a half-built version around.
dkms-install:
	@test -d /lib/modules/$(KVER)/build || { echo "No kernel headers for $(KVER): install linux-headers-$(KVER) or pass KVER=" >&2; exit 1; }
	@if [ ! -f $(DKMSSRCDIR)/dkms.conf ]; then \
		$(MAKE) --no-print-directory install-dkms-src NVS_MANIFEST= DESTDIR=; fi
	@[ -n "$$($(DKMS) status -m nvsidecar -v $(VERSION))" ] || $(DKMS) add -m nvsidecar -v $(VERSION)
	@if ! $(DKMS) build -m nvsidecar -v $(VERSION) -k $(KVER); then \
		log=/var/lib/dkms/nvsidecar/$(VERSION)/build/make.log; \
		echo "nvsidecar/$(VERSION) failed to build for $(KVER); the end of $$log:" >&2; \
		tail -n 15 "$$log" >&2 || true; \
		$(DKMS) remove -m nvsidecar -v $(VERSION) -k $(KVER) >/dev/null 2>&1 || true; \
		if [ -z "$$($(DKMS) status -m nvsidecar -v $(VERSION) | grep -E ': (built|installed)')" ]; then \
			$(DKMS) remove -m nvsidecar -v $(VERSION) --all >/dev/null 2>&1 || true; rm -rf $(DKMSSRCDIR); fi; \
		echo "Nothing of nvsidecar/$(VERSION) was installed for $(KVER)" >&2; exit 1; \
	fi
	$(DKMS) install -m nvsidecar -v $(VERSION) -k $(KVER)
	@echo "Module: $$(modinfo -k $(KVER) -F filename nvsidecar)"

dkms-uninstall:
	@if [ -n "$$($(DKMS) status -m nvsidecar -v $(VERSION) -k $(KVER))" ]; then \
		$(DKMS) remove -m nvsidecar -v $(VERSION) -k $(KVER); fi
	@if [ -z "$$($(DKMS) status -m nvsidecar -v $(VERSION) | grep -E ': (built|installed)')" ]; then \
		if [ -n "$$($(DKMS) status -m nvsidecar -v $(VERSION))" ]; then $(DKMS) remove -m nvsidecar -v $(VERSION) --all; fi; \
		rm -rf $(DKMSSRCDIR); fi

# Debian packages are built from a staged copy, so that the top level keeps
# its layout (no debian/ directory) and no build output leaks in.
NVS_DEB_STAGE = $(BUILD)/deb/nvsidecar-$(VERSION)
deb:
	@test -n "$(VERSION)" || { echo "No PACKAGE_VERSION in dkms.conf" >&2; exit 1; }
	rm -rf $(BUILD)/deb
	mkdir -p $(NVS_DEB_STAGE)
	tar -c --exclude-vcs --exclude='./build' --exclude='*.o' --exclude='user/*.d' --exclude='user/*/*.d' --exclude='user/sys/libnvsidecar/*.d' --exclude='*.ko' \
		--exclude='*.a' --exclude='*.so*' --exclude='*.cmd' --exclude='*.mod*' \
		--exclude='./user/nvsidecar' --exclude='Module.symvers' --exclude='modules.order' \
		Kbuild Makefile dkms.conf kmod user scripts $(wildcard README.md docs) | tar -x -C $(NVS_DEB_STAGE)
	cp -r scripts/debian $(NVS_DEB_STAGE)/debian
	for f in $(NVS_DEB_STAGE)/debian/*.in; do sed 's|@VERSION@|$(VERSION)|g' "$$f" >"$${f%.in}"; rm "$$f"; done
	printf '%s\n' "nvsidecar ($(VERSION)-1) unstable; urgency=medium" "" \
		"  * Package nvsidecar $(VERSION) (built by make deb)." "" \
		" -- nvsidecar maintainers <nvsidecar@example.org>  $$(date -R $${SOURCE_DATE_EPOCH:+-d @$$SOURCE_DATE_EPOCH})" \
		>$(NVS_DEB_STAGE)/debian/changelog
	cd $(NVS_DEB_STAGE) && dpkg-buildpackage $(DEBBUILDFLAGS) -us -uc
	@ls -1 $(BUILD)/deb/*.deb

NVS_RPM_TOP = $(abspath $(BUILD)/rpm)
rpm:
	rm -rf $(NVS_RPM_TOP)
	mkdir -p $(NVS_RPM_TOP)/SOURCES $(NVS_RPM_TOP)/SPECS
	tar -c --transform 's|^|nvsidecar-$(VERSION)/|' --exclude-vcs --exclude='./build' \
		--exclude='*.o' --exclude='user/*.d' --exclude='user/*/*.d' --exclude='user/sys/libnvsidecar/*.d' --exclude='*.ko' --exclude='*.a' --exclude='*.so*' \
		--exclude='*.cmd' --exclude='./user/nvsidecar' \
		Kbuild Makefile dkms.conf kmod user scripts $(wildcard README.md docs) | \
		gzip -n >$(NVS_RPM_TOP)/SOURCES/nvsidecar-$(VERSION).tar.gz
	sed 's|@VERSION@|$(VERSION)|g' scripts/rpm/nvsidecar.spec >$(NVS_RPM_TOP)/SPECS/nvsidecar.spec
	rpmbuild --define '_topdir $(NVS_RPM_TOP)' \
		--define 'with_man $(if $(wildcard docs/nvsidecar.8),1,0)' \
		--define 'with_completion $(if $(wildcard scripts/completion/nvsidecar.bash),1,0)' \
		$(RPMBUILDFLAGS) -ba $(NVS_RPM_TOP)/SPECS/nvsidecar.spec

rpm-lint:
	@mkdir -p $(BUILD)
	sed 's|@VERSION@|$(VERSION)|g' scripts/rpm/nvsidecar.spec >$(BUILD)/nvsidecar.spec
	rpmlint -r scripts/rpm/nvsidecar.rpmlintrc $(BUILD)/nvsidecar.spec

.PHONY: install install-dkms-src install-dkms install-helper uninstall dkms-install dkms-uninstall deb rpm rpm-lint
