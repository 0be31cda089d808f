/* tokenizer.h: a byte-level BPE tokenizer read from a Hugging Face tokenizer.json
 * (GPT-2, GPT-NeoX-20B and the like), producing the same ids as the `tokenizers`
 * library.
 *
 * Supported: model BPE (no dropout, no continuing-subword prefix or end-of-word
 * suffix, no byte fallback), normalizer null or NFC (alone or in a Sequence),
 * pre-tokenizer ByteLevel (GPT-2 regex, optional add_prefix_space), decoder ByteLevel
 * or null, added tokens with their single_word / lstrip / rstrip / normalized flags.
 * Anything else is refused at load with `FILE: unsupported tokenizer ... "X"`.
 *
 * Encoding follows the HF pipeline: added tokens with normalized=false are split out
 * of the raw text; the rest is NFC-normalised (when the file says so) and added
 * tokens with normalized=true are split out; each remaining piece is cut by the GPT-2
 * regex, its bytes mapped to the byte-level alphabet, and BPE-merged by merge rank.
 *
 * Invalid UTF-8: HF only accepts valid strings, so the input is first decoded the way
 * Python's bytes.decode("utf-8", "replace") and Rust's from_utf8_lossy do (each
 * maximal invalid subpart becomes one U+FFFD). Encoding invalid bytes therefore gives
 * exactly HF's ids for the lossily decoded text, and decode() returns that text.
 *
 * Thread safety: a loaded Tokenizer is read-only except for its word cache, which is
 * guarded by striped locks; tok_encode may be called from many threads at once. */
#ifndef VRL_TOKENIZER_H
#define VRL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct Tokenizer Tokenizer;

/* A growable id buffer; encode appends to it. Zero-initialise, free with tok_ids_free. */
typedef struct {
    uint32_t *ids;             /* [n], capacity cap */
    size_t n, cap;
} TokIds;

int tok_ids_push(TokIds *b, uint32_t id);
void tok_ids_free(TokIds *b);

/* Load a tokenizer.json. On error *out is NULL and vrl_last_error() names the file. */
int tok_load(const char *path, Tokenizer **out);
void tok_free(Tokenizer *t);

/* One more than the largest id (model vocabulary and added tokens together). */
uint32_t tok_vocab_size(const Tokenizer *t);

/* The id of a token given by its text (an added token such as "<|endoftext|>" or a
 * vocabulary entry in the byte-level alphabet); -1 if absent. */
int64_t tok_token_id(const Tokenizer *t, const char *content);

/* The text of token `id`: an added token's content, else its vocabulary entry in the
 * byte-level alphabet (the byte 0 is "\u0100"); *len bytes, not NUL-terminated, *added 1 for
 * an added token. NULL if the id has no token. */
const char *tok_token_text(const Tokenizer *t, uint32_t id, size_t *len, int *added);

/* Encode n bytes of text (need not be NUL-terminated, may hold invalid UTF-8),
 * appending ids to *out. Thread-safe. */
int tok_encode(const Tokenizer *t, const char *text, size_t n, TokIds *out);

/* Decode ids into a malloc'd NUL-terminated UTF-8 string (*n_out bytes without the
 * NUL). Invalid byte sequences become U+FFFD, as HF does. skip_special drops special
 * added tokens (HF's skip_special_tokens). An out-of-range id is an error. */
int tok_decode(const Tokenizer *t, const uint32_t *ids, size_t n, int skip_special,
               char **out, size_t *n_out);

/* Write a tokenizer.json (Hugging Face `tokenizers` format) whose id b is the byte b: byte-level
 * BPE with no merges, the tokenizer of `vrl data bytes` corpora. */
int tok_write_bytes_json(const char *path);

/* Helpers shared with tests: lossy UTF-8 repair (maximal subparts -> U+FFFD) and NFC.
 * Both return malloc'd NUL-terminated strings. */
int tok_utf8_lossy(const char *s, size_t n, char **out, size_t *n_out);
int tok_nfc(const char *s, size_t n, char **out, size_t *n_out);

#endif
