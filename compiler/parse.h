/* parse.h — the interface between the flex scanner, the bison parser and the driver. */
#ifndef TILEC_PARSE_H
#define TILEC_PARSE_H

#include "ast.h"

typedef struct ParseCtx {
    Arena *arena;
    DiagEngine *diag;
    int file;
    const char *text;       /* the file's text (owned by the DiagEngine) */
    Module *module;
    PtrVec items;           /* Item*, collected while parsing */
    /* doc comments: lines collected by the scanner, handed to the next item */
    StrBuf doc;
    bool doc_pending;
    const char *item_doc;
    uint32_t comment_start;
    uint32_t match_end;     /* end of the scanner's last match (token, space or comment) */
    uint32_t tok_end;       /* end of the last token returned to the parser */
    uint32_t prev_tok_end;  /* end of the token before it: where a missing ';' belongs */
    bool too_deep;          /* nesting limit hit: the tree must not be walked */
} ParseCtx;

/* Parses one file's text into ctx->module. Returns false on syntax errors. */
bool parse_file(ParseCtx *ctx);

/* used by the scanner and parser */
void parse_take_doc(ParseCtx *ctx);
void parse_clear_doc(ParseCtx *ctx);

#endif
