/* commands.h: the subcommands of `vrl`, one file each in cli/. Each returns the
 * process exit status (0 success, 1 error after printing one line, 2 usage). */
#ifndef VRL_COMMANDS_H
#define VRL_COMMANDS_H

int cmd_train(int argc, char **argv);
int cmd_info(int argc, char **argv);

#endif
