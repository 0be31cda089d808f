/* commands.h: the subcommands of `vrl`, one file each in cli/. Each takes the
 * arguments after `vrl` (argv[0] is the subcommand name) and returns the process exit
 * status (0 success, 1 error after printing one line, 2 usage). */
#ifndef VRL_COMMANDS_H
#define VRL_COMMANDS_H

int cmd_train(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_data(int argc, char **argv);
int data_bytes(int argc, char **argv); /* `vrl data bytes` (cmd_data_bytes.c) */
int data_reorganize(int argc, char **argv); /* cmd_data_reorganize.c */
int data_select(int argc, char **argv);     /* cmd_data_select.c */
int data_tokenize(int argc, char **argv);   /* cmd_data_tokenize.c */
int data_inspect(int argc, char **argv);    /* cmd_data_inspect.c */
int cmd_eval(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_generate(int argc, char **argv);

#endif
