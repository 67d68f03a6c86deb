/* cmd_pack.c — `baton pack`: placeholder until the img packer lands. */
#include "cli.h"
int cmd_pack(int argc, char **argv) { (void)argc; (void)argv; return CLI_ERROR; }
