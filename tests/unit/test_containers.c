// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Container metadata from the runtimes' own state, in a made-up root: containerd's task bundle, runc's state and its bundle, containers/storage, docker. */
#include "unit.h"
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trace/containers.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[512], cmd[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	if (system(cmd))
		return;
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_containerd_cri(void)
{
	struct eg_container_info ci = { .id = ID, .runtime = "containerd" };

	put("/run/containerd/io.containerd.runtime.v2.task/k8s.io/" ID "/config.json",
	    "{\"annotations\":{\"io.kubernetes.cri.container-name\":\"web\",\"io.kubernetes.cri.image-name\":"
	    "\"registry/shop:1.2\",\"io.kubernetes.cri.sandbox-name\":\"shop-7f9\",\"io.kubernetes.cri.sandbox-namespace\":"
	    "\"prod\",\"io.kubernetes.cri.sandbox-uid\":\"u-1\"}}");
	ASSERT_OK(containers_read(root, &ci), "found");
	ASSERT_STREQ(ci.name, "web", "name");
	ASSERT_STREQ(ci.image, "registry/shop:1.2", "image");
	ASSERT_STREQ(ci.pod_name, "shop-7f9", "pod");
	ASSERT_STREQ(ci.pod_namespace, "prod", "namespace");
	ASSERT_STREQ(ci.pod_uid, "u-1", "uid");
	containers_info_clear(&ci);
}

static void test_runc_bundle_and_storage(void)
{
	struct eg_container_info ci = { .id = "abcdefabcdef00112233", .runtime = "podman" };
	/* the bundle's path is the host's: under the made-up root here */
	put("/run/runc/abcdefabcdef00112233/state.json",
	    "{\"config\":{\"labels\":[\"io.container.manager=libpod\",\"bundle=/b\"]}}");
	put("/b/config.json", "{\"annotations\":{\"io.kubernetes.pod.name\":\"p\",\"io.kubernetes.container.name\":\"c\"}}");
	put("/var/lib/containers/storage/overlay-containers/containers.json",
	    "[{\"id\":\"other\",\"names\":[\"x\"]},{\"id\":\"abcdefabcdef00112233\",\"names\":[\"nice_name\"],"
	    "\"metadata\":\"{\\\"image-name\\\":\\\"localhost/egtest:1\\\",\\\"name\\\":\\\"nice_name\\\"}\"}]");
	ASSERT_OK(containers_read(root, &ci), "found");
	ASSERT_STREQ(ci.pod_name, "p", "pod from the bundle's annotations");
	/* the CRI's container name wins over the runtime's own */
	ASSERT_STREQ(ci.name, "c", "io.kubernetes.container.name");
	ASSERT_STREQ(ci.image, "localhost/egtest:1", "image from containers/storage");
	containers_info_clear(&ci);
}

static void test_nothing_known(void)
{
	struct eg_container_info ci = { .id = "feedfeedfeedfeed", .runtime = "podman" };

	ASSERT_EQ(containers_read(root, &ci), -ENOENT, "no state: not complete");
	ASSERT_TRUE(!ci.name && !ci.image && !ci.pod_name, "nothing made up");
}

int main(void)
{
	snprintf(root, sizeof(root), "/tmp/egunit-ct-%d", (int)getpid());
	RUN(test_containerd_cri);
	RUN(test_runc_bundle_and_storage);
	RUN(test_nothing_known);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd)) {
		}
	}
	return UNIT_DONE();
}
