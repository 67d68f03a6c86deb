/* notice_internal.h — what the files of src/notice share beyond notice.h, and what their tests and
 * fuzz targets reach: the parsers of metadata answers, the DMI cloud detection and the watcher's
 * target list (notice.c decides from them what to poll), the watcher's poll count, and the
 * emulator's clear (the /baton/clear control request). Not public. */
#ifndef BATON_NOTICE_INTERNAL_H
#define BATON_NOTICE_INTERNAL_H

#include "baton/notice.h"

/* ---- the metadata emulator (imds.c) */
/* Withdraw a scheduled interruption and rebalance recommendation (a test convenience). */
void notice_imds_clear(baton_imds *m);

/* ---- the watcher (notice.c) */
/* What a watcher with these options would poll, decided without any network access (endpoints,
 * AWS_EC2_METADATA_DISABLED, DMI): base URLs into ec2/gce ("" when not polled). Returns the
 * BATON_NOTICE_WATCH_* flags of notice.h (SIGTERM included), or a negative status for a malformed
 * endpoint. */
int notice_targets(const baton_notice_opts *o, char *ec2, size_t ec2_cap, char *gce, size_t gce_cap,
                         baton_err *err);
/* The same for Azure's metadata service: its base URL into azure ("" when not polled); returns
 * BATON_NOTICE_WATCH_AZURE, 0, or a negative status for a malformed endpoint. */
int notice_azure_target(const baton_notice_opts *o, char *azure, size_t cap, baton_err *err);
/* Polls done so far (each a round over the configured services; for tests). */
uint64_t notice_rounds(const baton_notice_watcher *w);

/* The parsers of metadata answers (exposed for tests and fuzzing). An instance-action body is a
 * notice when it is a JSON object with "action" terminate|stop|hibernate and a "time" that parses:
 * returns 1 with *kind and *deadline set, else 0. A rebalance body is {"noticeTime": time}: returns
 * 1 with *notice_time and the raw string (for telling recommendations apart) in raw, else 0. */
int notice_parse_action(const char *body, size_t len, baton_notice_kind *kind, double *deadline);
int notice_parse_rebalance(const char *body, size_t len, double *notice_time, char *raw, size_t raw_cap);

/* ---- Azure's Scheduled Events (azure.c) */
/* HTTP dates as Azure writes NotBefore: "Mon, 19 Sep 2016 18:29:47 GMT" (the weekday must be the
 * date's). parse returns 0 and sets *t, or -1; format writes that form. */
int notice_http_time_parse(const char *s, double *t);
void notice_http_time_format(double t, char out[32]);
/* A scheduledevents answer: 1 with *kind (PREEMPTED for Preempt, TERMINATE for Terminate),
 * *deadline (NotBefore; now for a Started event without one) and the event's id when an event of
 * this machine (vm; NULL or "": any machine) announces its end; else 0. See azure.c. */
int notice_parse_azure(const char *body, size_t len, const char *vm, double now, baton_notice_kind *kind,
                             double *deadline, char *event_id, size_t id_cap);

/* ---- clouds (cloud.c) */
/* DMI detection without network: BATON_CLOUD_EC2 when sys_vendor is "Amazon EC2", board_asset_tag
 * starts with "i-", or the bios/product strings name Amazon (older Xen instances);
 * BATON_CLOUD_GCE when product_name / sys_vendor / bios_vendor name Google; BATON_CLOUD_AZURE when
 * chassis_asset_tag is Azure's 7783-7084-3265-9085-8269-3286-77. dir NULL: the default
 * folder. */
enum { BATON_CLOUD_UNKNOWN = 0, BATON_CLOUD_EC2 = 1, BATON_CLOUD_GCE = 2, BATON_CLOUD_AZURE = 3 };
int notice_cloud_detect(const char *dmi_dir);

#endif
