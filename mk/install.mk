# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Installing execgate (included from the Makefile). docs/install.md says more.
#
#   make install [PREFIX=/usr/local] [DESTDIR=DIR]   binary, man pages, bash
#       completion, example policies in /etc/execgate (an existing policy is
#       never overwritten), systemd unit, logrotate snippet, docs
#   make uninstall [PREFIX=...] [DESTDIR=...]         removes what install put,
#       except a policy that differs from the shipped one (yours now)
#   make deb                                          .output/execgate_VERSION_ARCH.deb

PREFIX       ?= /usr/local
SBINDIR      ?= $(PREFIX)/sbin
DATADIR      ?= $(PREFIX)/share
MANDIR       ?= $(DATADIR)/man
DOCDIR       ?= $(DATADIR)/doc/execgate
BASHCOMPDIR  ?= $(DATADIR)/bash-completion/completions
# systemd looks in /usr/local/lib/systemd/system and /lib/systemd/system too
UNITDIR      ?= $(PREFIX)/lib/systemd/system
# configuration lives in /etc whatever the prefix: the unit names the policy there
SYSCONFDIR   ?= /etc
POLICYDIR    := $(SYSCONFDIR)/execgate
LOGROTATEDIR := $(SYSCONFDIR)/logrotate.d
INSTALL      ?= install

POLICIES     := $(wildcard policy/*.yaml)
MANPAGES     := man/execgate.8 man/execgate-policy.5
# installed name = source
DOCS         := README.md=README.md docs/events.md=events.md docs/events.schema.json=events.schema.json \
                docs/control.md=control.md docs/metrics.md=metrics.md docs/shipping.md=shipping.md docs/api.md=api.md \
                docs/fleet.md=fleet.md docs/maps.md=maps.md docs/install.md=install.md \
                policy/README.md=policy.md

EG_VERSION   := $(shell sed -n 's/^\#define EG_VERSION "\(.*\)"/\1/p' userspace/util/version.h)
DEB_ARCH     := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB          := $(OUTPUT)/execgate_$(EG_VERSION)_$(DEB_ARCH).deb
DEB_ROOT     := $(OUTPUT)/deb/root

.PHONY: install uninstall deb

# Bash completion, from the binary's own help: a new verb or option is
# completed as soon as the binary has it.
$(OUTPUT)/execgate.bash: $(OUTPUT)/execgate tools/gen-completion.py
	$(call msg,GEN,$@)
	$(Q)tools/gen-completion.py $(OUTPUT)/execgate > $@

install: $(OUTPUT)/execgate $(OUTPUT)/execgate-shim $(OUTPUT)/execgate.bash
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX) $(DESTDIR)$(SYSCONFDIR))
	$(Q)$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(LOGROTATEDIR) \
		$(DESTDIR)$(DOCDIR)
	$(Q)$(INSTALL) -d -m 0755 $(DESTDIR)$(POLICYDIR)
	$(Q)$(INSTALL) -m 0755 $(OUTPUT)/execgate $(DESTDIR)$(SBINDIR)/execgate
	$(Q)$(INSTALL) -m 0755 $(OUTPUT)/execgate-shim $(DESTDIR)$(SBINDIR)/execgate-shim
	$(Q)$(INSTALL) -m 0644 man/execgate.8 $(DESTDIR)$(MANDIR)/man8/execgate.8
	$(Q)$(INSTALL) -m 0644 man/execgate-policy.5 $(DESTDIR)$(MANDIR)/man5/execgate-policy.5
	$(Q)$(INSTALL) -m 0644 $(OUTPUT)/execgate.bash $(DESTDIR)$(BASHCOMPDIR)/execgate
	$(Q)sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		dist/execgate.service.in > $(DESTDIR)$(UNITDIR)/execgate.service
	$(Q)chmod 0644 $(DESTDIR)$(UNITDIR)/execgate.service
	$(Q)$(INSTALL) -m 0644 dist/execgate.logrotate $(DESTDIR)$(LOGROTATEDIR)/execgate
	$(Q)for d in $(DOCS); do \
		$(INSTALL) -m 0644 "$${d%%=*}" "$(DESTDIR)$(DOCDIR)/$${d#*=}" || exit 1; \
	done
	$(Q)for p in $(POLICIES); do \
		dst="$(DESTDIR)$(POLICYDIR)/$${p##*/}"; \
		if [ -e "$$dst" ] || [ -L "$$dst" ]; then \
			cmp -s "$$p" "$$dst" || printf '  %-8s %s\n' KEEP "$$dst (yours; the example is $$p)" >&2; \
		else \
			$(INSTALL) -m 0644 "$$p" "$$dst" || exit 1; \
		fi; \
	done

uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX) $(DESTDIR)$(SYSCONFDIR))
	$(Q)rm -f $(DESTDIR)$(SBINDIR)/execgate $(DESTDIR)$(SBINDIR)/execgate-shim \
		$(DESTDIR)$(MANDIR)/man8/execgate.8 $(DESTDIR)$(MANDIR)/man5/execgate-policy.5 \
		$(DESTDIR)$(BASHCOMPDIR)/execgate $(DESTDIR)$(UNITDIR)/execgate.service \
		$(DESTDIR)$(LOGROTATEDIR)/execgate
	$(Q)for d in $(DOCS); do rm -f "$(DESTDIR)$(DOCDIR)/$${d#*=}"; done
	$(Q)rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	$(Q)for p in $(POLICIES); do \
		dst="$(DESTDIR)$(POLICYDIR)/$${p##*/}"; \
		if cmp -s "$$p" "$$dst"; then \
			rm -f "$$dst"; \
		elif [ -e "$$dst" ]; then \
			printf '  %-8s %s\n' KEEP "$$dst (edited)" >&2; \
		fi; \
	done
	$(Q)rmdir $(DESTDIR)$(POLICYDIR) 2>/dev/null || true

# The .deb: `make install` into a staging root with Debian's paths, man pages
# compressed, the binary stripped, Depends from dpkg-shlibdeps, the files in
# /etc as conffiles, maintainer scripts from dist/deb/.
deb: $(DEB)

$(DEB): $(OUTPUT)/execgate $(OUTPUT)/execgate.bash $(MANPAGES) $(POLICIES) dist/execgate.service.in \
	dist/execgate.logrotate $(wildcard dist/deb/*) $(foreach d,$(DOCS),$(firstword $(subst =, ,$(d)))) \
	mk/install.mk
	$(call msg,DEB,$@)
	$(Q)rm -rf $(OUTPUT)/deb && mkdir -p $(DEB_ROOT)/DEBIAN $(OUTPUT)/deb/shlibs/debian
	$(Q)$(MAKE) --no-print-directory install DESTDIR=$(abspath $(DEB_ROOT)) PREFIX=/usr \
		UNITDIR=/lib/systemd/system Q=@ msg= >&2
	$(Q)strip --strip-unneeded --remove-section=.comment --remove-section=.note \
		$(DEB_ROOT)/usr/sbin/execgate $(DEB_ROOT)/usr/sbin/execgate-shim
	$(Q)gzip -9n $(DEB_ROOT)/usr/share/man/man8/execgate.8 $(DEB_ROOT)/usr/share/man/man5/execgate-policy.5
	$(Q)$(INSTALL) -m 0644 dist/deb/copyright $(DEB_ROOT)/usr/share/doc/execgate/copyright
	$(Q)for s in postinst prerm postrm; do \
		$(INSTALL) -m 0755 dist/deb/$$s $(DEB_ROOT)/DEBIAN/$$s || exit 1; \
	done
	$(Q)(cd $(DEB_ROOT) && find etc -type f | sed 's|^|/|' | sort) > $(DEB_ROOT)/DEBIAN/conffiles
	$(Q)printf 'Source: execgate\n\nPackage: execgate\nArchitecture: any\n' \
		> $(OUTPUT)/deb/shlibs/debian/control
	$(Q)depends=$$(cd $(OUTPUT)/deb/shlibs && \
		dpkg-shlibdeps -O -e $(abspath $(DEB_ROOT))/usr/sbin/execgate 2>/dev/null | \
		sed -n 's/^shlibs:Depends=//p'); \
	[ -n "$$depends" ] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }; \
	sed -e 's|@VERSION@|$(EG_VERSION)|' -e 's|@ARCH@|$(DEB_ARCH)|' \
	    -e "s|@DEPENDS@|$$depends|" \
	    -e "s|@SIZE@|$$(du -sk --exclude=DEBIAN $(DEB_ROOT) | cut -f1)|" \
		dist/deb/control.in > $(DEB_ROOT)/DEBIAN/control
	$(Q)dpkg-deb --root-owner-group -Zxz --build $(DEB_ROOT) $@ >/dev/null
