/* cmd_inspect.c — `baton inspect`: placeholder until the inspector lands. */
#include "cli.h"
int cmd_inspect(int argc, char **argv) { (void)argc; (void)argv; return CLI_ERROR; }
