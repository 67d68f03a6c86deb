/* cloud.c — which cloud this machine runs on, from the DMI strings the kernel exposes under
 * /sys/devices/virtual/dmi/id (no network: the watcher must not knock on a link-local address of a
 * machine that has no metadata service). BATON_DMI_DIR overrides the folder (tests).
 *
 * EC2: sys_vendor "Amazon EC2" (Nitro), board_asset_tag "i-..." (the instance id on Nitro), or
 * "amazon" in bios_version / bios_vendor / product_version (older Xen-based instances: e.g.
 * bios_version "4.11.amazon"). GCE: "Google" in sys_vendor / bios_vendor or product_name
 * "Google Compute Engine". Azure: chassis_asset_tag 7783-7084-3265-9085-8269-3286-77 (the tag every Azure
 * machine carries; a Hyper-V machine elsewhere says "Microsoft Corporation" too, so the vendor is not
 * enough). Files that are missing or unreadable (product_uuid is root-only) count
 * as empty. */
#include "notice_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The first line of dir/name, trimmed, into out ("" when unreadable). */
static void dmi_read(const char *dir, const char *name, char *out, size_t cap)
{
    out[0] = 0;
    char path[4096];
    if (baton_path_join(path, sizeof path, dir, name, NULL)) return;
    FILE *f = fopen(path, "re");
    if (!f) return;
    if (!fgets(out, (int)cap, f)) out[0] = 0;
    fclose(f);
    size_t n = strlen(out);
    while (n && isspace((unsigned char)out[n - 1])) out[--n] = 0;
    size_t s = 0;
    while (out[s] && isspace((unsigned char)out[s])) s++;
    if (s) memmove(out, out + s, n - s + 1);
}

static int has_word(const char *s, const char *w)
{
    return strcasestr(s, w) != NULL;
}

int notice_cloud_detect(const char *dmi_dir)
{
    const char *dir = dmi_dir;
    if (!dir) dir = getenv("BATON_DMI_DIR");
    if (!dir || !*dir) dir = "/sys/devices/virtual/dmi/id";
    char v[256];
    dmi_read(dir, "sys_vendor", v, sizeof v);
    if (!strcmp(v, "Amazon EC2")) return BATON_CLOUD_EC2;
    if (has_word(v, "Google")) return BATON_CLOUD_GCE;
    dmi_read(dir, "board_asset_tag", v, sizeof v);
    if (!strncmp(v, "i-", 2) && v[2]) return BATON_CLOUD_EC2;
    static const char *const amazon_files[] = {"bios_version", "bios_vendor", "product_version"};
    for (size_t i = 0; i < sizeof amazon_files / sizeof amazon_files[0]; i++) {
        dmi_read(dir, amazon_files[i], v, sizeof v);
        if (has_word(v, "amazon")) return BATON_CLOUD_EC2;
    }
    dmi_read(dir, "product_name", v, sizeof v);
    if (!strcmp(v, "Google Compute Engine")) return BATON_CLOUD_GCE;
    dmi_read(dir, "bios_vendor", v, sizeof v);
    if (has_word(v, "Google")) return BATON_CLOUD_GCE;
    dmi_read(dir, "chassis_asset_tag", v, sizeof v);
    if (!strcmp(v, "7783-7084-3265-9085-8269-3286-77")) return BATON_CLOUD_AZURE;
    return BATON_CLOUD_UNKNOWN;
}
