// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Writes a minimal 32-bit x86 ELF shared object that exits 0 (int $0x80,
 * exit): PATH, mode 0755. With no PT_INTERP it is shaped like a dynamic
 * loader (a 32-bit loader asked for it execs it); with INTERP (the 32-bit
 * loader) it is a dynamic program needing no library (a symbol table of
 * one empty symbol) that a loader run as a command maps and jumps to, with
 * no exec of its own.
 *   elf32_exit PATH [INTERP]
 */
#include <elf.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NPH	4
#define NDYN	6

struct image {
	Elf32_Ehdr eh;
	Elf32_Phdr ph[NPH];
	Elf32_Dyn dyn[NDYN];
	Elf32_Word hash[4];	/* nbucket 1, nchain 1, bucket[0], chain[0] */
	Elf32_Sym sym[1];
	char str[4];
	unsigned char code[12];
	char interp[64];
};

int main(int argc, char **argv)
{
	/* xor ebx, ebx; mov eax, 1; int $0x80 */
	static const unsigned char code[] = { 0x31, 0xdb, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xcd, 0x80 };
	static struct image im;
	size_t len = offsetof(struct image, interp);
	int fd, i = 0, n = 0;

	if (argc < 2 || argc > 3 || (argc == 3 && strlen(argv[2]) >= sizeof(im.interp))) {
		fprintf(stderr, "usage: elf32_exit PATH [INTERP]\n");
		return 2;
	}
	memcpy(im.eh.e_ident, ELFMAG, SELFMAG);
	im.eh.e_ident[EI_CLASS] = ELFCLASS32;
	im.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	im.eh.e_ident[EI_VERSION] = EV_CURRENT;
	im.eh.e_type = ET_DYN;
	im.eh.e_machine = EM_386;
	im.eh.e_version = EV_CURRENT;
	im.eh.e_entry = offsetof(struct image, code);
	im.eh.e_phoff = offsetof(struct image, ph);
	im.eh.e_ehsize = sizeof(im.eh);
	im.eh.e_phentsize = sizeof(Elf32_Phdr);
	memcpy(im.code, code, sizeof(code));
	/* PT_PHDR and PT_INTERP first (the loader finds where it was put by PT_PHDR), then the rest */
	if (argc == 3) {
		strcpy(im.interp, argv[2]);
		len = offsetof(struct image, interp) + strlen(argv[2]) + 1;
		im.ph[i].p_type = PT_PHDR;
		im.ph[i].p_offset = im.ph[i].p_vaddr = offsetof(struct image, ph);
		im.ph[i].p_filesz = im.ph[i].p_memsz = sizeof(im.ph);
		im.ph[i].p_flags = PF_R;
		im.ph[i++].p_align = 4;
		im.ph[i].p_type = PT_INTERP;
		im.ph[i].p_offset = im.ph[i].p_vaddr = offsetof(struct image, interp);
		im.ph[i].p_filesz = im.ph[i].p_memsz = strlen(argv[2]) + 1;
		im.ph[i].p_flags = PF_R;
		im.ph[i++].p_align = 1;
	}
	im.ph[i].p_type = PT_LOAD;
	im.ph[i].p_filesz = im.ph[i].p_memsz = len;
	im.ph[i].p_flags = PF_R | PF_W | PF_X;
	im.ph[i++].p_align = 0x1000;
	im.ph[i].p_type = PT_DYNAMIC;
	im.ph[i].p_offset = im.ph[i].p_vaddr = offsetof(struct image, dyn);
	im.ph[i].p_filesz = im.ph[i].p_memsz = sizeof(im.dyn);
	im.ph[i].p_flags = PF_R | PF_W;
	im.ph[i++].p_align = 4;
	im.eh.e_phnum = i;
	im.hash[0] = im.hash[1] = 1;
	im.dyn[n].d_tag = DT_HASH;
	im.dyn[n++].d_un.d_ptr = offsetof(struct image, hash);
	im.dyn[n].d_tag = DT_STRTAB;
	im.dyn[n++].d_un.d_ptr = offsetof(struct image, str);
	im.dyn[n].d_tag = DT_SYMTAB;
	im.dyn[n++].d_un.d_ptr = offsetof(struct image, sym);
	im.dyn[n].d_tag = DT_STRSZ;
	im.dyn[n++].d_un.d_val = sizeof(im.str);
	im.dyn[n].d_tag = DT_SYMENT;
	im.dyn[n++].d_un.d_val = sizeof(Elf32_Sym);
	im.dyn[n].d_tag = DT_NULL;
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0 || write(fd, &im, len) != (ssize_t)len || close(fd))
		return perror(argv[1]), 1;
	return 0;
}
