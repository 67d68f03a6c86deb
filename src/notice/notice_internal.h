/* notice_internal.h — what the files of src/notice share beyond notice.h, and what their tests and
 * fuzz targets reach: the parsers of metadata answers, the DMI cloud detection and the watcher's
 * target list (notice.c decides from them what to poll), the watcher's poll count, and the
 * emulator's clear (the /baton/clear control request). Not public. */
#ifndef BATON_NOTICE_INTERNAL_H
#define BATON_NOTICE_INTERNAL_H

#include "baton/notice.h"

/* ---- the metadata emulator (imds.c) */
/* Withdraw a scheduled interruption and rebalance recommendation (a test convenience). */
void baton_imds_clear(baton_imds *m);

/* ---- the watcher (notice.c) */
/* What a watcher with these options would poll, decided without any network access (endpoints,
 * AWS_EC2_METADATA_DISABLED, DMI): base URLs into ec2/gce ("" when not polled). Returns the
 * BATON_NOTICE_WATCH_* flags of notice.h (SIGTERM included), or a negative status for a malformed
 * endpoint. */
int baton_notice_targets(const baton_notice_opts *o, char *ec2, size_t ec2_cap, char *gce, size_t gce_cap,
                         baton_err *err);
/* Polls done so far (each a round over the configured services; for tests). */
uint64_t baton_notice_rounds(const baton_notice_watcher *w);

/* The parsers of metadata answers (exposed for tests and fuzzing). An instance-action body is a
 * notice when it is a JSON object with "action" terminate|stop|hibernate and a "time" that parses:
 * returns 1 with *kind and *deadline set, else 0. A rebalance body is {"noticeTime": time}: returns
 * 1 with *notice_time and the raw string (for telling recommendations apart) in raw, else 0. */
int baton_notice_parse_action(const char *body, size_t len, baton_notice_kind *kind, double *deadline);
int baton_notice_parse_rebalance(const char *body, size_t len, double *notice_time, char *raw, size_t raw_cap);

/* ---- clouds (cloud.c) */
/* DMI detection without network: BATON_CLOUD_EC2 when sys_vendor is "Amazon EC2", board_asset_tag
 * starts with "i-", or the bios/product strings name Amazon (older Xen instances);
 * BATON_CLOUD_GCE when product_name / sys_vendor / bios_vendor name Google. dir NULL: the default
 * folder. */
enum { BATON_CLOUD_UNKNOWN = 0, BATON_CLOUD_EC2 = 1, BATON_CLOUD_GCE = 2 };
int baton_cloud_detect(const char *dmi_dir);

#endif
