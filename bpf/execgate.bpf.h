/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Helpers for the BPF side only. */
#ifndef EXECGATE_BPF_H
#define EXECGATE_BPF_H

#define EG_EVENT_HDR	sizeof(struct eg_event)

/* container_of with a CO-RE offset: struct mount's layout moves between kernels. */
#define eg_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - bpf_core_field_offset(type, member)))

#endif /* EXECGATE_BPF_H */
