/* analyze_depth.h: the AttnRes depth-attention matrix of a trained run (formulas.md §5). */
#ifndef VRL_ANALYZE_DEPTH_H
#define VRL_ANALYZE_DEPTH_H

/* For every sublayer input (and the head's), its softmax weights over its sources,
 * averaged over the tokens of `batches` validation batches of the run (data: the run's
 * --val-data, or `data` when not NULL). Prints the matrix and writes out_dir/
 * depth_attention.{csv,dat,gp,png} (the PNG when gnuplot is installed). 0 or -1 with
 * vrl_error() set (not an AttnRes run, missing files, bad data). */
int analyze_depth_attention(const char *run_dir, const char *out_dir, const char *data, int batches);

#endif
