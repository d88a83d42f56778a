# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The OCI image for a fleet (included from the Makefile; docs/fleet.md):
#   make image      localhost/execgate:latest, built with podman from the
#                   binary and the libraries it links; no registry
IMAGE ?= localhost/execgate:latest

.PHONY: image
image: $(OUTPUT)/execgate
	$(call msg,IMAGE,$(IMAGE))
	$(Q)tools/build-image.sh $(OUTPUT)/execgate $(IMAGE) >/dev/null
