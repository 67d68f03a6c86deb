/* aws_internal.h — what the files of the aws fleet backend share (not a public API: src/fleet and
 * its tests). The backend by concept:
 *   aws_check.c     the job file's aws: section and what the chosen API can do;
 *   aws_iam.c       the IAM documents: trust policies, the instance policy (only what the user data
 *                   does, for the chosen API), the deployer policy (what commands.sh, status and
 *                   cancel need);
 *   aws_requests.c  the API requests, as the APIs' own parameters: the launch template, the Auto
 *                   Scaling group, the EC2 Fleet, the Spot Fleet (the seed's);
 *   aws_userdata.c  the script each instance runs at first boot;
 *   fleet_aws.c     generating every artefact and the aws CLI commands, in order;
 *   aws_apply.c     running them (--apply), the record of what was created, status and cancel. */
#ifndef BATON_FLEET_AWS_INTERNAL_H
#define BATON_FLEET_AWS_INTERNAL_H

#include <cJSON.h>

#include "remote_internal.h"

/* The per-task names: "<role_prefix>-<job>-<task>", the launch template's and the Auto Scaling
 * group's (the API's own resources are named by it; a Spot Fleet or EC2 Fleet gets an id). */
void aws_task_name(const baton_job *job, const baton_aws_opts *o, size_t task, char *out, size_t cap);
/* The API's name as the job file spells it: auto-scaling-group, ec2-fleet, spot-fleet. */
const char *aws_api_name(int api);
/* The allocation strategy as Spot Fleet spells it (priceCapacityOptimized, ...); EC2 Auto Scaling
 * and EC2 Fleet spell it as the job file does (baton_alloc_name: price-capacity-optimized, ...). */
const char *aws_alloc_camel(baton_alloc a);

/* IAM documents (aws_iam.c); each returns a new cJSON tree (NULL: out of memory). */
cJSON *aws_trust(const char *service);
cJSON *aws_instance_policy(const baton_job *job, const baton_aws_opts *o);
cJSON *aws_deployer_policy(const baton_job *job, const baton_aws_opts *o, const baton_aws_names *nm);

/* Requests (aws_requests.c): the parameters of CreateLaunchTemplate, CreateAutoScalingGroup,
 * CreateFleet and RequestSpotFleet for one task, usable with `aws ... --cli-input-json`.
 * userdata_b64: the task's user data, base64. */
cJSON *aws_launch_template(const baton_job *job, const baton_aws_opts *o, const baton_aws_names *nm, size_t task,
                           const char *userdata_b64);
cJSON *aws_auto_scaling_group(const baton_job *job, const baton_aws_opts *o, size_t task);
cJSON *aws_ec2_fleet(const baton_job *job, const baton_aws_opts *o, size_t task);
cJSON *aws_spot_fleet(const baton_job *job, const baton_aws_opts *o, const baton_aws_names *nm, size_t task,
                      const char *userdata_b64);
/* The job's tags on a task's resources (baton-job, baton-task, aws.tags) as [{Key, Value}]. */
cJSON *aws_tags(const baton_job *job, const baton_aws_opts *o, size_t task);

/* Write doc (consumed) as indented JSON to dir/name; path gets the full path. */
int aws_write_json(const char *dir, const char *name, cJSON *doc, char *path, size_t cap, baton_err *err);

#endif
