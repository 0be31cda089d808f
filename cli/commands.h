/* commands.h: the vrl subcommands, each `int cmd_X(int argc, char **argv)` taking the
 * arguments after the subcommand name (argv[0] is the subcommand) and returning the
 * process exit status. */
#ifndef VRL_COMMANDS_H
#define VRL_COMMANDS_H

int cmd_tokenize(int argc, char **argv);
int cmd_data(int argc, char **argv);

#endif
