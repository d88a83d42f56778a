// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The kernel's device number of a file: kdev.h. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fileid.h"
#include "kdev.h"

#define KDEV_CACHE	64

struct kdev_entry {
	uint64_t mnt_id;
	dev_t st_dev;
	uint64_t kdev;
};

static struct kdev_entry cache[KDEV_CACHE];
static unsigned int cache_n, cache_next;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* The device and file system type of mount mnt_id (mountinfo's 3rd and 9th fields). */
static int mount_of(uint64_t mnt_id, unsigned int *maj, unsigned int *min, char *type, size_t type_len)
{
	char line[8192], fstype[64];
	unsigned long long id;
	int rc = -1;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *sep;

		if (sscanf(line, "%llu %*u %u:%u", &id, maj, min) != 3 || id != mnt_id)
			continue;
		/* the optional fields end with " - ", then the type */
		sep = strstr(line, " - ");
		if (sep && sscanf(sep + 3, "%63s", fstype) == 1) {
			snprintf(type, type_len, "%s", fstype);
			rc = 0;
		}
		break;
	}
	fclose(f);
	return rc;
}

uint64_t eg_kdev_at(int dirfd, const char *path, int at_flags, const struct stat *st)
{
	uint64_t own = eg_kdev(st->st_dev), kdev = own;
	unsigned int i, maj, min;
	struct statx stx;
	char type[64];

	if (major(st->st_dev))
		return own;	/* a block device's number: the super block's */
	if (statx(dirfd, path, at_flags | AT_STATX_DONT_SYNC, STATX_INO | STATX_MNT_ID, &stx) ||
	    !(stx.stx_mask & STATX_MNT_ID) || stx.stx_ino != st->st_ino ||
	    makedev(stx.stx_dev_major, stx.stx_dev_minor) != st->st_dev)
		return own;
	pthread_mutex_lock(&cache_lock);
	for (i = 0; i < cache_n; i++) {
		if (cache[i].mnt_id == stx.stx_mnt_id && cache[i].st_dev == st->st_dev) {
			kdev = cache[i].kdev;
			pthread_mutex_unlock(&cache_lock);
			return kdev;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	/* btrfs: the mount's device, the one its files' super block has; others keep st_dev */
	if (!mount_of(stx.stx_mnt_id, &maj, &min, type, sizeof(type)) && !strcmp(type, "btrfs"))
		kdev = ((uint64_t)maj << 20) | min;
	pthread_mutex_lock(&cache_lock);
	cache[cache_next] = (struct kdev_entry){ stx.stx_mnt_id, st->st_dev, kdev };
	cache_next = (cache_next + 1) % KDEV_CACHE;
	if (cache_n < KDEV_CACHE)
		cache_n++;
	pthread_mutex_unlock(&cache_lock);
	return kdev;
}
