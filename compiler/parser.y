/* parser.y — the tilec grammar: a pure, reentrant LALR(1) parser with locations.
 * The EBNF above each rule is the one in docs/language.md. */
%define api.pure full
%define api.prefix {tl_yy}
%define api.location.type {Loc}
%define parse.error custom
%locations
%expect 0
%lex-param {void *scanner}
%parse-param {void *scanner} {ParseCtx *ctx}

%code requires {
#include "parse.h"
typedef struct ArgList { ExprList args; const char **names; int nnamed; } ArgList;
typedef struct NameList { Name *v; int n; } NameList;
typedef struct GenList { GenericParam *v; int n; } GenList;
typedef struct ParamList { Param *v; int n; } ParamList;
typedef struct SpecList { SpecArg *v; int n; } SpecList;
typedef struct TypeList { TypeExpr **v; int n; } TypeList;
typedef struct LaunchAttrs { ExprList cluster; Expr *bps; bool coop, pdl; } LaunchAttrs;
}

%code provides {
int tl_yylex(TL_YYSTYPE *lval, Loc *lloc, void *scanner);
}

%code {
#include <string.h>
#include "lexer.h"

#define YYLLOC_DEFAULT(Cur, Rhs, N)                                   \
    do {                                                              \
        if (N) {                                                      \
            (Cur).file = YYRHSLOC(Rhs, 1).file;                       \
            (Cur).begin = YYRHSLOC(Rhs, 1).begin;                     \
            (Cur).end = YYRHSLOC(Rhs, N).end;                         \
        } else {                                                      \
            (Cur).file = YYRHSLOC(Rhs, 0).file;                       \
            (Cur).begin = (Cur).end = YYRHSLOC(Rhs, 0).end;           \
        }                                                             \
    } while (0)

static Arena *A(ParseCtx *c) { return c->arena; }
static Expr *mk_bin(ParseCtx *c, OpKind op, Expr *a, Expr *b, Loc loc);
static Expr *mk_un(ParseCtx *c, OpKind op, Expr *a, Loc loc);
static void check_depth(ParseCtx *c, int depth, Loc loc);
static void nesting(ParseCtx *c, Expr *e, Loc loc);
static int stmts_depth(StmtList l);
static void *list_room(ParseCtx *c, void *v, int n, size_t size);
static void push_name(ParseCtx *c, NameList *l, const char *s, Loc loc);
static void push_arg(ParseCtx *c, ArgList *l, const char *name, Expr *e);
static void persistent_args(ParseCtx *c, Launch *l, ArgList *a, Loc loc);
static Stmt *tile_loop(ParseCtx *c, const char *kw, Loc kwloc, NameList names, StmtList body, Loc loc);
static void tl_yyerror(Loc *loc, void *scanner, ParseCtx *ctx, const char *msg);
}

%union {
    int64_t ival;
    double fval;
    const char *str;
    DType dt;
    OpKind op;
    Expr *expr;
    Stmt *stmt;
    Item *item;
    TypeExpr *texpr;
    ExprList elist;
    StmtList slist;
    ArgList alist;
    NameList nlist;
    GenList glist;
    GenericParam gparam;
    GenericKind gkind;
    ParamList plist;
    Param param;
    SpecList splist;
    SpecArg sparg;
    TypeList tlist;
    Launch launch;
    LaunchAttrs lattrs;
    bool flag;
}

%token <ival> INT "integer literal"
%token <fval> FLOAT "floating-point literal"
%token <str> STRING "string literal"
%token <str> IDENT "identifier"
%token <dt> TYPENAME "type name"
%token <op> ASSIGNOP "compound assignment"
%token IMPORT "import" CONST "const" FN "fn" KERNEL "kernel" SPECIALIZE "specialize"
%token LET "let" VAR "var" SHARED "shared" FRAG "frag" LOCAL "local"
%token IF "if" ELSE "else" FOR "for" IN "in" UNROLL "unroll" PIPELINED "pipelined"
%token WHILE "while" PARALLEL "parallel" RETURN "return" BREAK "break" CONTINUE "continue"
%token REQUIRE "require" GRID "grid" THREADS "threads" CLUSTER "cluster"
%token COOPERATIVE "cooperative" PDL "pdl" PERSISTENT "persistent" BLOCKS_PER_SM "blocks_per_sm" LAYOUT "layout" STRIDES "strides" STEP "step"
%token TRUE "true" FALSE "false" KW_INT "int" KW_FLOAT "float" KW_TYPE "type"
%token BITCAST "bitcast" CONVERT "convert" VIEW "view" KW_LIST "list"
%token COLONCOLON "::" DOTDOT ".." ARROW "->" EQ "==" NE "!=" LE "<=" GE ">="
%token ANDAND "&&" OROR "||" SHL "<<" SHR ">>"

%type <item> item import_item const_item fn_item kernel_item spec_item
%type <expr> expr or_expr and_expr cmp_expr bor_expr bxor_expr band_expr shift_expr add_expr
%type <expr> mul_expr unary_expr postfix_expr primary gexpr index_elem opt_init opt_step
%type <elist> expr_list opt_expr_list index_list opt_strides gexpr_list
%type <alist> call_args opt_call_args named_args opt_layout
%type <stmt> stmt block_stmt if_stmt
%type <slist> stmts block opt_else
%type <nlist> ident_list let_pattern
%type <glist> opt_generics generic_list
%type <gparam> generic_param
%type <gkind> generic_kind
%type <plist> opt_params param_list
%type <param> param
%type <texpr> type_expr elem_type opt_type_ann opt_ret
%type <tlist> type_list
%type <splist> spec_args
%type <sparg> spec_arg
%type <launch> launch
%type <lattrs> launch_attrs
%type <ival> storage_kw
%type <str> opt_msg

%start module

%%

/* module = { item } ; */
module
    : %empty
    | module item           { if ($2) ptrvec_push(&ctx->items, $2); }
    ;

item
    : import_item | const_item | fn_item | kernel_item | spec_item
    | error ';'             { $$ = NULL; ctx->item_doc = NULL; }
    | error '}'             { $$ = NULL; ctx->item_doc = NULL; }
    | error block           { $$ = NULL; ctx->item_doc = NULL; } /* a broken signature: skip its body whole */
    ;

/* import = "import" string ";" ; */
import_item
    : IMPORT STRING ';'
        { $$ = ast_item(A(ctx), IT_IMPORT, @$); $$->path = $2; $$->imported_file = -1; }
    ;

/* const = "const" ident [ ":" type ] "=" expr ";" ; */
const_item
    : CONST IDENT opt_type_ann '=' expr ';'
        { $$ = ast_item(A(ctx), IT_CONST, @$); $$->name.s = $2; $$->name.loc = @2;
          $$->ty = $3; $$->value = $5; $$->doc = ctx->item_doc; ctx->item_doc = NULL; }
    ;

/* fn = "fn" ident [ generics ] "(" [ params ] ")" [ "->" type ] block ; */
fn_item
    : FN IDENT opt_generics '(' opt_params ')' opt_ret block
        { $$ = ast_item(A(ctx), IT_FN, @$); $$->name.s = $2; $$->name.loc = @2;
          $$->doc = ctx->item_doc; ctx->item_doc = NULL;
          $$->generics = $3.v; $$->ngenerics = $3.n; $$->params = $5.v; $$->nparams = $5.n;
          $$->ret = $7; $$->body = $8; }
    ;

/* kernel = "kernel" ident [ generics ] "(" [ params ] ")" launch block ; */
kernel_item
    : KERNEL IDENT opt_generics '(' opt_params ')' launch block
        { $$ = ast_item(A(ctx), IT_KERNEL, @$); $$->name.s = $2; $$->name.loc = @2;
          $$->doc = ctx->item_doc; ctx->item_doc = NULL;
          $$->generics = $3.v; $$->ngenerics = $3.n; $$->params = $5.v; $$->nparams = $5.n;
          $$->launch = $7; $$->body = $8; }
    ;

/* specialize = "specialize" ident [ "<" spec_arg { "," spec_arg } ">" ] ";" ;
   spec_arg = ident "=" ( gexpr | "(" gexpr { "," gexpr } ")" ) ;
   without a list: the one instance of every default (a kernel without generics: its only one) */
spec_item
    : SPECIALIZE IDENT '<' spec_args '>' ';'
        { $$ = ast_item(A(ctx), IT_SPECIALIZE, @$); $$->name.s = $2; $$->name.loc = @2;
          $$->sargs = $4.v; $$->nsargs = $4.n; }
    | SPECIALIZE IDENT ';'
        { $$ = ast_item(A(ctx), IT_SPECIALIZE, @$); $$->name.s = $2; $$->name.loc = @2; }
    ;
spec_args
    : spec_arg                  { $$.v = NULL; $$.n = 0;
                                  $$.v = ARENA_ARRAY(A(ctx), SpecArg, 1); $$.v[0] = $1; $$.n = 1; }
    | spec_args ',' spec_arg    { $$.v = list_room(ctx, $1.v, $1.n, sizeof(SpecArg)); $$.v[$1.n] = $3;
                                  $$.n = $1.n + 1; }
    ;
spec_arg
    : IDENT '=' gexpr           { memset(&$$, 0, sizeof $$); $$.name.s = $1; $$.name.loc = @1;
                                  exprlist_push(A(ctx), &$$.values, $3); }
    | IDENT '=' '(' gexpr ',' gexpr_list ')'
                                { memset(&$$, 0, sizeof $$); $$.name.s = $1; $$.name.loc = @1;
                                  exprlist_push(A(ctx), &$$.values, $4);
                                  for (int i = 0; i < $6.n; i++) exprlist_push(A(ctx), &$$.values, $6.v[i]); }
    ;
gexpr_list
    : gexpr                     { memset(&$$, 0, sizeof $$); exprlist_push(A(ctx), &$$, $1); }
    | gexpr_list ',' gexpr      { $$ = $1; exprlist_push(A(ctx), &$$, $3); }
    ;
/* expressions inside < > stop below comparisons, so that '>' closes the list */
gexpr : add_expr ;

/* generics = "<" generic { "," generic } ">" ;
   generic = ident ":" ( "int" | "bool" | "float" | "type" ) [ "=" gexpr ] ; */
opt_generics
    : %empty                    { $$.v = NULL; $$.n = 0; }
    | '<' generic_list '>'      { $$ = $2; }
    ;
generic_list
    : generic_param             { $$.v = ARENA_ARRAY(A(ctx), GenericParam, 1); $$.v[0] = $1; $$.n = 1; }
    | generic_list ',' generic_param
                                { $$.v = list_room(ctx, $1.v, $1.n, sizeof(GenericParam)); $$.v[$1.n] = $3;
                                  $$.n = $1.n + 1; }
    ;
generic_param
    : IDENT ':' generic_kind              { memset(&$$, 0, sizeof $$); $$.name.s = $1; $$.name.loc = @1; $$.kind = $3; }
    | IDENT ':' generic_kind '=' gexpr    { memset(&$$, 0, sizeof $$); $$.name.s = $1; $$.name.loc = @1; $$.kind = $3; $$.deflt = $5; }
    ;
generic_kind
    : KW_INT                    { $$ = GK_INT; }
    | KW_FLOAT                  { $$ = GK_FLOAT; }
    | KW_TYPE                   { $$ = GK_TYPE; }
    | TYPENAME                  { $$ = GK_BOOL;
                                  if ($1 != DT_BOOL)
                                      diag_error(ctx->diag, @1, "a generic parameter's kind is 'int', 'bool', 'float' or 'type', not '%s'", dtype_name($1)); }
    ;

/* params = param { "," param } ;  param = ident ":" ( type | tile_type ) ;
   tile_type = ( "shared" | "frag" | "local" ) elem_type "[" expr_list "]" ;   (fn parameters) */
opt_params
    : %empty                    { $$.v = NULL; $$.n = 0; }
    | param_list                { $$ = $1; }
    | param_list ','            { $$ = $1; }
    ;
param_list
    : param                     { $$.v = ARENA_ARRAY(A(ctx), Param, 1); $$.v[0] = $1; $$.n = 1; }
    | param_list ',' param      { $$.v = list_room(ctx, $1.v, $1.n, sizeof(Param)); $$.v[$1.n] = $3;
                                  $$.n = $1.n + 1; }
    ;
param
    : IDENT ':' type_expr       { memset(&$$, 0, sizeof $$); $$.name.s = $1; $$.name.loc = @1; $$.ty = $3; }
    | IDENT ':' storage_kw elem_type '[' expr_list ']'
        { memset(&$$, 0, sizeof $$); $$.name.s = $1; $$.name.loc = @1;
          $$.ty = ast_type(A(ctx), TE_TILE, @3); $$.ty->loc.end = @7.end; $$.ty->scope = (Scope)$3;
          $$.ty->elem = $4; $$.ty->dims = $6; }
    ;

/* type = elem_type [ "[" expr_list "]" [ "strides" "(" expr_list ")" ] [ "?" ] ]
        | "list" "<" type "," gexpr [ "," ident "=" gexpr ] ">"
        | "(" type { "," type } ")" ;
   elem_type = type_name | ident ; */
type_expr
    : elem_type                 { $$ = $1; }
    | elem_type '[' expr_list ']' opt_strides
        { $$ = ast_type(A(ctx), TE_TENSOR, @$); $$->elem = $1; $$->dims = $3; $$->strides = $5; }
    | elem_type '[' expr_list ']' opt_strides '?'
        { $$ = ast_type(A(ctx), TE_TENSOR, @$); $$->elem = $1; $$->dims = $3; $$->strides = $5; $$->optional = true; }
    | KW_LIST '<' type_expr ',' gexpr '>'
        { $$ = ast_type(A(ctx), TE_LIST, @$); $$->elem = $3; $$->len = $5; }
    | KW_LIST '<' type_expr ',' gexpr ',' IDENT '=' gexpr '>'
        { $$ = ast_type(A(ctx), TE_LIST, @$); $$->elem = $3; $$->len = $5; $$->cap_name = $7; $$->cap_loc = @7;
          $$->cap = $9; }
    | '(' type_list ')'
        { $$ = ast_type(A(ctx), TE_TUPLE, @$); $$->elems = $2.v; $$->nelems = $2.n; }
    ;
elem_type
    : TYPENAME                  { $$ = ast_type(A(ctx), TE_PRIM, @$); $$->prim = $1; }
    | IDENT                     { $$ = ast_type(A(ctx), TE_NAMED, @$); $$->name = $1; }
    ;
type_list
    : type_expr                 { $$.v = ARENA_ARRAY(A(ctx), TypeExpr *, 1); $$.v[0] = $1; $$.n = 1; }
    | type_list ',' type_expr   { $$.v = list_room(ctx, $1.v, $1.n, sizeof(TypeExpr *)); $$.v[$1.n] = $3;
                                  $$.n = $1.n + 1; }
    ;
opt_strides
    : %empty                    { memset(&$$, 0, sizeof $$); }
    | STRIDES '(' expr_list ')' { $$ = $3; }
    ;
opt_type_ann
    : %empty                    { $$ = NULL; }
    | ':' type_expr             { $$ = $2; }
    ;
opt_ret
    : %empty                    { $$ = NULL; }
    | ARROW type_expr           { $$ = $2; }
    ;

/* launch = ( "grid" "(" expr_list ")" | "persistent" "(" ident "=" expr { "," ident "=" expr } ")" )
            "threads" "(" expr ")" { launch_attr } ;
   launch_attr = "cluster" "(" expr_list ")" | "cooperative" | "pdl" | "blocks_per_sm" "(" expr ")" ;
   persistent's arguments: tiles = expr | "[" expr_list "]", waves = expr, stages = expr */
launch
    : GRID '(' expr_list ')' THREADS '(' expr ')' launch_attrs
        { memset(&$$, 0, sizeof $$); $$.grid = $3; $$.threads = $7; $$.cluster = $9.cluster;
          $$.cooperative = $9.coop; $$.pdl = $9.pdl; $$.blocks_per_sm = $9.bps; $$.loc = @$; }
    | PERSISTENT '(' named_args ')' THREADS '(' expr ')' launch_attrs
        { memset(&$$, 0, sizeof $$); $$.threads = $7; $$.cluster = $9.cluster;
          $$.cooperative = $9.coop; $$.pdl = $9.pdl; $$.blocks_per_sm = $9.bps; $$.loc = @$;
          persistent_args(ctx, &$$, &$3, @1); }
    ;
launch_attrs
    : %empty                    { memset(&$$, 0, sizeof $$); }
    | launch_attrs CLUSTER '(' expr_list ')' { $$ = $1; $$.cluster = $4; }
    | launch_attrs COOPERATIVE  { $$ = $1; $$.coop = true; }
    | launch_attrs PDL          { $$ = $1; $$.pdl = true; }
    | launch_attrs BLOCKS_PER_SM '(' expr ')' { $$ = $1; $$.bps = $4; }
    ;

/* block = "{" { stmt } "}" ; */
block
    : '{' stmts '}'             { $$ = $2; }
    /* a statement broken just before the '}' (a missing ';', say) ends here with its block,
       instead of taking the '}' as its own end and leaving the block open */
    | '{' stmts error '}'       { $$ = $2; }
    ;
stmts
    : %empty                    { memset(&$$, 0, sizeof $$); }
    | stmts stmt                { $$ = $1; if ($2) stmtlist_push(A(ctx), &$$, $2); }
    ;

/* stmt = let | var | storage | assign | expr ";" | if | for | while | parallel
        | "return" [ expr_list ] ";" | "break" ";" | "continue" ";" | require | block ; */
stmt
    : LET let_pattern opt_type_ann '=' expr ';'
        { $$ = ast_stmt(A(ctx), ST_LET, @$); $$->names = $2.v; $$->nnames = $2.n; $$->ty = $3; $$->e = $5; }
    | VAR IDENT opt_type_ann opt_init ';'
        { $$ = ast_stmt(A(ctx), ST_VAR, @$); $$->names = ARENA_NEW(A(ctx), Name);
          $$->names[0].s = $2; $$->names[0].loc = @2; $$->nnames = 1; $$->ty = $3; $$->e = $4; }
    | storage_kw IDENT ':' elem_type '[' expr_list ']' opt_layout ';'
        { $$ = ast_stmt(A(ctx), ST_STORAGE, @$); $$->scope = (Scope)$1;
          $$->names = ARENA_NEW(A(ctx), Name); $$->names[0].s = $2; $$->names[0].loc = @2; $$->nnames = 1;
          $$->ty = $4; $$->dims = $6; $$->has_layout = $8.nnamed >= 0 && ($8.args.n > 0 || $8.nnamed > 0);
          $$->layout_args = $8.args; $$->layout_names = $8.names; }
    | expr '=' expr ';'
        { $$ = ast_stmt(A(ctx), ST_ASSIGN, @$); $$->lhs = $1; $$->e = $3; $$->assign_op = OP_NONE; }
    | expr ASSIGNOP expr ';'
        { $$ = ast_stmt(A(ctx), ST_ASSIGN, @$); $$->lhs = $1; $$->e = $3; $$->assign_op = $2; }
    | expr ';'
        { $$ = ast_stmt(A(ctx), ST_EXPR, @$); $$->e = $1; }
    | if_stmt                   { $$ = $1; }
    | FOR IDENT IN expr DOTDOT expr opt_step block
        { $$ = ast_stmt(A(ctx), ST_FOR, @$); $$->for_kind = FOR_SERIAL;
          $$->names = ARENA_NEW(A(ctx), Name); $$->names[0].s = $2; $$->names[0].loc = @2; $$->nnames = 1;
          $$->lo = $4; $$->hi = $6; $$->step = $7; $$->body = $8;
          $$->depth = 1 + stmts_depth($8); check_depth(ctx, $$->depth, @1); }
    | FOR UNROLL IDENT IN expr DOTDOT expr opt_step block
        { $$ = ast_stmt(A(ctx), ST_FOR, @$); $$->for_kind = FOR_UNROLL;
          $$->names = ARENA_NEW(A(ctx), Name); $$->names[0].s = $3; $$->names[0].loc = @3; $$->nnames = 1;
          $$->lo = $5; $$->hi = $7; $$->step = $8; $$->body = $9;
          $$->depth = 1 + stmts_depth($9); check_depth(ctx, $$->depth, @1); }
    | FOR PIPELINED '(' IDENT '=' expr ')' IDENT IN expr DOTDOT expr opt_step block
        { $$ = ast_stmt(A(ctx), ST_FOR, @$); $$->for_kind = FOR_PIPELINED;
          if (strcmp($4, "stages") != 0)
              diag_error(ctx->diag, @4, "'pipelined' takes 'stages = N', not '%s'", $4);
          $$->stages = $6;
          $$->names = ARENA_NEW(A(ctx), Name); $$->names[0].s = $8; $$->names[0].loc = @8; $$->nnames = 1;
          $$->lo = $10; $$->hi = $12; $$->step = $13; $$->body = $14;
          $$->depth = 1 + stmts_depth($14); check_depth(ctx, $$->depth, @1); }
    /* for tile t { ... } | for tile ( ident_list ) { ... }: the tiles of a persistent launch */
    | FOR IDENT IDENT block
        { NameList n = {0}; push_name(ctx, &n, $3, @3); $$ = tile_loop(ctx, $2, @2, n, $4, @$); }
    | FOR IDENT '(' ident_list ')' block
        { $$ = tile_loop(ctx, $2, @2, $4, $6, @$); }
    | WHILE expr block
        { $$ = ast_stmt(A(ctx), ST_WHILE, @$); $$->e = $2; $$->body = $3;
          $$->depth = 1 + stmts_depth($3); check_depth(ctx, $$->depth, @1); }
    | PARALLEL '(' ident_list ')' IN IDENT block
        { $$ = ast_stmt(A(ctx), ST_PARALLEL, @$); $$->names = $3.v; $$->nnames = $3.n;
          $$->target.s = $6; $$->target.loc = @6; $$->body = $7;
          $$->depth = 1 + stmts_depth($7); check_depth(ctx, $$->depth, @1); }
    | RETURN opt_expr_list ';'
        { $$ = ast_stmt(A(ctx), ST_RETURN, @$);
          if ($2.n == 1) $$->e = $2.v[0];
          else if ($2.n > 1) { $$->e = ast_expr(A(ctx), EX_LIST, @2); $$->e->args = $2; } }
    | BREAK ';'                 { $$ = ast_stmt(A(ctx), ST_BREAK, @$); }
    | CONTINUE ';'              { $$ = ast_stmt(A(ctx), ST_CONTINUE, @$); }
    | REQUIRE expr opt_msg ';'  { $$ = ast_stmt(A(ctx), ST_REQUIRE, @$); $$->e = $2; $$->msg = $3; }
    | block_stmt                { $$ = $1; }
    | error ';'                 { $$ = NULL; }
    | error block               { $$ = NULL; } /* a broken if/for/while/parallel header */
    ;
block_stmt
    : block                     { $$ = ast_stmt(A(ctx), ST_BLOCK, @$); $$->body = $1;
                                  $$->depth = 1 + stmts_depth($1); check_depth(ctx, $$->depth, @$); }
    ;
storage_kw
    : SHARED                    { $$ = SC_SHARED; }
    | FRAG                      { $$ = SC_FRAG; }
    | LOCAL                     { $$ = SC_LOCAL; }
    ;
opt_layout
    : %empty                    { memset(&$$, 0, sizeof $$); }
    | LAYOUT '(' named_args ')' { $$ = $3; }
    ;
named_args
    : IDENT '=' expr            { memset(&$$, 0, sizeof $$); push_arg(ctx, &$$, $1, $3); }
    | named_args ',' IDENT '=' expr { $$ = $1; push_arg(ctx, &$$, $3, $5); }
    ;
let_pattern
    : IDENT                     { memset(&$$, 0, sizeof $$); push_name(ctx, &$$, $1, @1); }
    | '(' ident_list ')'        { $$ = $2; }
    ;
ident_list
    : IDENT                     { memset(&$$, 0, sizeof $$); push_name(ctx, &$$, $1, @1); }
    | ident_list ',' IDENT      { $$ = $1; push_name(ctx, &$$, $3, @3); }
    ;
opt_init
    : %empty                    { $$ = NULL; }
    | '=' expr                  { $$ = $2; }
    ;
opt_step
    : %empty                    { $$ = NULL; }
    | STEP expr                 { $$ = $2; }
    ;
opt_msg
    : %empty                    { $$ = NULL; }
    | ',' STRING                { $$ = $2; }
    ;

/* if = "if" [ "const" ] expr block [ "else" ( if | block ) ] ; */
if_stmt
    : IF expr block opt_else
        { $$ = ast_stmt(A(ctx), ST_IF, @$); $$->e = $2; $$->body = $3; $$->els = $4; $$->has_else = $4.n > 0 || @4.end > @4.begin;
          $$->depth = 1 + (stmts_depth($3) > stmts_depth($4) ? stmts_depth($3) : stmts_depth($4));
          check_depth(ctx, $$->depth, @1); }
    | IF CONST expr block opt_else
        { $$ = ast_stmt(A(ctx), ST_IF, @$); $$->is_const = true; $$->e = $3; $$->body = $4; $$->els = $5;
          $$->has_else = $5.n > 0 || @5.end > @5.begin;
          $$->depth = 1 + (stmts_depth($4) > stmts_depth($5) ? stmts_depth($4) : stmts_depth($5));
          check_depth(ctx, $$->depth, @1); }
    ;
opt_else
    : %empty                    { memset(&$$, 0, sizeof $$); }
    | ELSE block                { $$ = $2; }
    | ELSE if_stmt              { memset(&$$, 0, sizeof $$); stmtlist_push(A(ctx), &$$, $2); }
    ;

/* expressions, loosest first:  ||  &&  comparisons  |  ^  &  << >>  + -  * / %  unary  postfix */
expr : or_expr ;
or_expr
    : and_expr
    | or_expr OROR and_expr     { $$ = mk_bin(ctx, OP_LOR, $1, $3, @$); }
    ;
and_expr
    : cmp_expr
    | and_expr ANDAND cmp_expr  { $$ = mk_bin(ctx, OP_LAND, $1, $3, @$); }
    ;
cmp_expr
    : bor_expr
    | bor_expr EQ bor_expr      { $$ = mk_bin(ctx, OP_EQ, $1, $3, @$); }
    | bor_expr NE bor_expr      { $$ = mk_bin(ctx, OP_NE, $1, $3, @$); }
    | bor_expr '<' bor_expr     { $$ = mk_bin(ctx, OP_LT, $1, $3, @$); }
    | bor_expr LE bor_expr      { $$ = mk_bin(ctx, OP_LE, $1, $3, @$); }
    | bor_expr '>' bor_expr     { $$ = mk_bin(ctx, OP_GT, $1, $3, @$); }
    | bor_expr GE bor_expr      { $$ = mk_bin(ctx, OP_GE, $1, $3, @$); }
    ;
bor_expr
    : bxor_expr
    | bor_expr '|' bxor_expr    { $$ = mk_bin(ctx, OP_BOR, $1, $3, @$); }
    ;
bxor_expr
    : band_expr
    | bxor_expr '^' band_expr   { $$ = mk_bin(ctx, OP_BXOR, $1, $3, @$); }
    ;
band_expr
    : shift_expr
    | band_expr '&' shift_expr  { $$ = mk_bin(ctx, OP_BAND, $1, $3, @$); }
    ;
shift_expr
    : add_expr
    | shift_expr SHL add_expr   { $$ = mk_bin(ctx, OP_SHL, $1, $3, @$); }
    | shift_expr SHR add_expr   { $$ = mk_bin(ctx, OP_SHR, $1, $3, @$); }
    ;
add_expr
    : mul_expr
    | add_expr '+' mul_expr     { $$ = mk_bin(ctx, OP_ADD, $1, $3, @$); }
    | add_expr '-' mul_expr     { $$ = mk_bin(ctx, OP_SUB, $1, $3, @$); }
    ;
mul_expr
    : unary_expr
    | mul_expr '*' unary_expr   { $$ = mk_bin(ctx, OP_MUL, $1, $3, @$); }
    | mul_expr '/' unary_expr   { $$ = mk_bin(ctx, OP_DIV, $1, $3, @$); }
    | mul_expr '%' unary_expr   { $$ = mk_bin(ctx, OP_MOD, $1, $3, @$); }
    ;
unary_expr
    : postfix_expr
    | '-' unary_expr            { $$ = mk_un(ctx, OP_NEG, $2, @$); }
    | '!' unary_expr            { $$ = mk_un(ctx, OP_NOT, $2, @$); }
    | '~' unary_expr            { $$ = mk_un(ctx, OP_BNOT, $2, @$); }
    ;
postfix_expr
    : primary
    | postfix_expr '(' opt_call_args ')'
        { $$ = ast_expr(A(ctx), EX_CALL, @$); $$->a = $1; $$->args = $3.args; $$->arg_names = $3.names;
          nesting(ctx, $$, @$); }
    | postfix_expr COLONCOLON '<' gexpr_list '>' '(' opt_call_args ')'
        { $$ = ast_expr(A(ctx), EX_CALL, @$); $$->a = $1; $$->targs = $4; $$->args = $7.args; $$->arg_names = $7.names;
          nesting(ctx, $$, @$); }
    | postfix_expr '[' index_list ']'
        { $$ = ast_expr(A(ctx), EX_INDEX, @$); $$->a = $1; $$->args = $3; nesting(ctx, $$, @$); }
    | postfix_expr '.' IDENT
        { $$ = ast_expr(A(ctx), EX_MEMBER, @$); $$->a = $1; $$->str = $3; nesting(ctx, $$, @$); }
    ;
primary
    : INT                       { $$ = ast_expr(A(ctx), EX_INT, @$); $$->ival = $1; }
    | FLOAT                     { $$ = ast_expr(A(ctx), EX_FLOAT, @$); $$->fval = $1; }
    | TRUE                      { $$ = ast_expr(A(ctx), EX_BOOL, @$); $$->bval = true; }
    | FALSE                     { $$ = ast_expr(A(ctx), EX_BOOL, @$); $$->bval = false; }
    | STRING                    { $$ = ast_expr(A(ctx), EX_STRING, @$); $$->str = $1; }
    | IDENT                     { $$ = ast_expr(A(ctx), EX_NAME, @$); $$->str = $1; }
    | TYPENAME                  { $$ = ast_expr(A(ctx), EX_TYPE, @$); $$->prim = $1; }
    | '(' expr ')'              { $$ = $2; $$->depth++; check_depth(ctx, $$->depth, @$); }
    | '[' expr_list ']'
        { $$ = ast_expr(A(ctx), EX_LIST, @$); $$->args = $2; nesting(ctx, $$, @$); }
    | BITCAST '<' gexpr_list '>' '(' opt_call_args ')'
        { $$ = ast_expr(A(ctx), EX_CALL, @$); $$->a = ast_expr(A(ctx), EX_NAME, @1); $$->a->str = "bitcast";
          $$->targs = $3; $$->args = $6.args; $$->arg_names = $6.names;
          nesting(ctx, $$, @$); }
    | CONVERT '<' gexpr_list '>' '(' opt_call_args ')'
        { $$ = ast_expr(A(ctx), EX_CALL, @$); $$->a = ast_expr(A(ctx), EX_NAME, @1); $$->a->str = "convert";
          $$->targs = $3; $$->args = $6.args; $$->arg_names = $6.names;
          nesting(ctx, $$, @$); }
    | VIEW '<' gexpr_list '>' '(' opt_call_args ')'
        { $$ = ast_expr(A(ctx), EX_CALL, @$); $$->a = ast_expr(A(ctx), EX_NAME, @1); $$->a->str = "view";
          $$->targs = $3; $$->args = $6.args; $$->arg_names = $6.names;
          nesting(ctx, $$, @$); }
    ;

/* call_args = [ arg { "," arg } [ "," ] ] ;  arg = expr | ident "=" expr ; */
opt_call_args
    : %empty                    { memset(&$$, 0, sizeof $$); }
    | call_args                 { $$ = $1; }
    | call_args ','             { $$ = $1; }
    ;
call_args
    : expr                      { memset(&$$, 0, sizeof $$); push_arg(ctx, &$$, NULL, $1); }
    | IDENT '=' expr            { memset(&$$, 0, sizeof $$); push_arg(ctx, &$$, $1, $3); }
    | call_args ',' expr        { $$ = $1; push_arg(ctx, &$$, NULL, $3); }
    | call_args ',' IDENT '=' expr { $$ = $1; push_arg(ctx, &$$, $3, $5); }
    ;

/* index = expr | [ expr ] ":" [ expr ] ; */
index_list
    : index_elem                { memset(&$$, 0, sizeof $$); exprlist_push(A(ctx), &$$, $1); }
    | index_list ',' index_elem { $$ = $1; exprlist_push(A(ctx), &$$, $3); }
    ;
index_elem
    : expr                      { $$ = $1; }
    | expr ':' expr             { $$ = ast_expr(A(ctx), EX_SLICE, @$); $$->a = $1; $$->b = $3; nesting(ctx, $$, @$); }
    | ':' expr                  { $$ = ast_expr(A(ctx), EX_SLICE, @$); $$->b = $2; nesting(ctx, $$, @$); }
    | expr ':'                  { $$ = ast_expr(A(ctx), EX_SLICE, @$); $$->a = $1; nesting(ctx, $$, @$); }
    | ':'                       { $$ = ast_expr(A(ctx), EX_SLICE, @$); }
    ;

expr_list
    : expr                      { memset(&$$, 0, sizeof $$); exprlist_push(A(ctx), &$$, $1); }
    | expr_list ',' expr        { $$ = $1; exprlist_push(A(ctx), &$$, $3); }
    ;
opt_expr_list
    : %empty                    { memset(&$$, 0, sizeof $$); }
    | expr_list                 { $$ = $1; }
    ;

%%

static Expr *mk_bin(ParseCtx *c, OpKind op, Expr *a, Expr *b, Loc loc)
{
    Expr *e = ast_expr(A(c), EX_BINARY, loc);
    e->op = op;
    e->a = a;
    e->b = b;
    nesting(c, e, loc);
    return e;
}

static Expr *mk_un(ParseCtx *c, OpKind op, Expr *a, Loc loc)
{
    Expr *e = ast_expr(A(c), EX_UNARY, loc);
    e->op = op;
    e->a = a;
    nesting(c, e, loc);
    return e;
}

static void take_max(int *depth, int *height, const Expr *e)
{
    if (!e)
        return;
    if (e->depth > *depth)
        *depth = e->depth;
    if (e->height > *height)
        *height = e->height;
}

/* The nesting of a new node from its children. depth is what nests in the source — parentheses
 * (the rule for them adds one), calls, indices, members, slices, lists, prefix operators — and
 * not a binary operator, so that a chain `a + b + ... + z` is one level however long;
 * TL_MAX_NESTING bounds it. height is the longest path down the tree, every node counted: how
 * deep the compiler's walks recurse, bounded by TL_MAX_EXPR_HEIGHT so that they cannot run out
 * of stack. */
static void nesting(ParseCtx *c, Expr *e, Loc loc)
{
    int depth = 0, height = 0;
    take_max(&depth, &height, e->a);
    take_max(&depth, &height, e->b);
    take_max(&depth, &height, e->c);
    for (int i = 0; i < e->args.n; i++)
        take_max(&depth, &height, e->args.v[i]);
    for (int i = 0; i < e->targs.n; i++)
        take_max(&depth, &height, e->targs.v[i]);
    e->depth = depth + (e->kind != EX_BINARY);
    e->height = height + 1;
    check_depth(c, e->depth, loc);
    if (e->height > TL_MAX_EXPR_HEIGHT && !c->too_deep) {
        c->too_deep = true;
        diag_error(c->diag, loc, "this expression has more than %d operations inside one another; split it with 'let'",
                   TL_MAX_EXPR_HEIGHT);
    }
}

static void check_depth(ParseCtx *c, int depth, Loc loc)
{
    if (depth > TL_MAX_NESTING && !c->too_deep) {
        c->too_deep = true;
        diag_error(c->diag, loc, "nesting is deeper than %d levels", TL_MAX_NESTING);
    }
}

static int stmts_depth(StmtList l)
{
    int d = 0;
    for (int i = 0; i < l.n; i++)
        if (l.v[i]->depth > d)
            d = l.v[i]->depth;
    return d;
}

/* Room for element n of an arena array of n elements. The capacity doubles when n reaches a
 * power of two, so that a list of n elements costs O(n) to build, not O(n^2). */
static void *list_room(ParseCtx *c, void *v, int n, size_t size)
{
    if (n & (n - 1))
        return v;
    void *nv = arena_alloc(A(c), size * (size_t)(n ? 2 * n : 1));
    if (n)
        memcpy(nv, v, size * (size_t)n);
    return nv;
}

static void push_name(ParseCtx *c, NameList *l, const char *s, Loc loc)
{
    Name *v = list_room(c, l->v, l->n, sizeof(Name));
    v[l->n].s = s;
    v[l->n].loc = loc;
    l->v = v;
    l->n++;
}

static void push_arg(ParseCtx *c, ArgList *l, const char *name, Expr *e)
{
    if (!name && l->nnamed > 0)
        diag_error(c->diag, e->loc, "positional argument after a named argument");
    const char **names = list_room(c, l->names, l->args.n, sizeof(const char *));
    names[l->args.n] = name;
    l->names = names;
    if (name)
        l->nnamed++;
    exprlist_push(A(c), &l->args, e);
}

/* persistent(tiles = ..., waves = ..., stages = ...): the arguments sorted into the launch, and
 * the grid they stand for */
static void persistent_args(ParseCtx *c, Launch *l, ArgList *a, Loc loc)
{
    l->persistent = true;
    bool tiles = false;
    for (int i = 0; i < a->args.n; i++) {
        const char *nm = a->names[i];
        Expr *v = a->args.v[i];
        bool twice = (!strcmp(nm, "tiles") && tiles) || (!strcmp(nm, "waves") && l->waves) ||
                     (!strcmp(nm, "stages") && l->stages);
        if (twice) {
            diag_error(c->diag, v->loc, "'%s' is given twice", nm);
        } else if (!strcmp(nm, "tiles")) {
            tiles = true;
            if (v->kind == EX_LIST)
                l->tiles = v->args;
            else
                exprlist_push(A(c), &l->tiles, v);
        } else if (!strcmp(nm, "waves")) {
            l->waves = v;
        } else if (!strcmp(nm, "stages")) {
            l->stages = v;
        } else {
            diag_error(c->diag, v->loc, "'persistent' takes 'tiles', 'waves' and 'stages', not '%s'", nm);
        }
    }
    if (!tiles)
        diag_error(c->diag, loc, "'persistent' needs 'tiles = N', the number of tiles to work through");
    ast_expand_persistent(A(c), l);
}

/* for tile t { ... } / for tile (tx, ty) { ... }: `tile` is an identifier spelled so */
static Stmt *tile_loop(ParseCtx *c, const char *kw, Loc kwloc, NameList names, StmtList body, Loc loc)
{
    if (strcmp(kw, "tile") != 0)
        diag_error(c->diag, kwloc, "expected 'in' or, for the loop over a persistent launch's tiles, 'for tile %s', not '%s'",
                   names.v[0].s, kw);
    Stmt *s = ast_stmt(A(c), ST_FOR, loc);
    s->for_kind = FOR_TILE;
    s->names = names.v;
    s->nnames = names.n;
    s->body = body;
    s->depth = 1 + stmts_depth(body);
    check_depth(c, s->depth, loc);
    return s;
}

/* only reached for bison's own failures: its stack is exhausted by very deep nesting (of
 * '(' or '{', say) before any rule has been reduced and checked the depth */
static void tl_yyerror(Loc *loc, void *scanner, ParseCtx *ctx, const char *msg)
{
    (void)scanner;
    (void)msg;
    if (!ctx->too_deep) {
        ctx->too_deep = true;
        diag_error(ctx->diag, *loc, "nesting is deeper than %d levels", TL_MAX_NESTING);
    }
}

/* "expected X or Y, found Z" with the token's spelling as the user typed it. */
static int yyreport_syntax_error(const yypcontext_t *pctx, void *scanner, ParseCtx *ctx)
{
    (void)scanner;
    enum { MAXEXP = 5 };
    yysymbol_kind_t expected[MAXEXP];
    /* keywords and operators are quoted like single characters ('grid', '..'); descriptive
     * names (identifier, end of file) are not */
#define PUT_SYMBOL(b, k)                                                                     \
    do {                                                                                     \
        const char *nm_ = yysymbol_name(k);                                                  \
        if (nm_[0] == '\'' || strchr(nm_, ' ') || (k) == YYSYMBOL_IDENT)                    \
            sb_puts((b), nm_);                                                               \
        else                                                                                 \
            sb_printf((b), "'%s'", nm_);                                                     \
    } while (0)
    int n = yypcontext_expected_tokens(pctx, expected, MAXEXP);
    yysymbol_kind_t found = yypcontext_token(pctx);
    Loc loc = *yypcontext_location(pctx);
    StrBuf msg = {0};
    if (n > 0 && n < MAXEXP) {
        sb_puts(&msg, "expected ");
        for (int i = 0; i < n; i++) {
            if (i > 0)
                sb_puts(&msg, i == n - 1 ? " or " : ", ");
            PUT_SYMBOL(&msg, expected[i]);
        }
        sb_puts(&msg, ", found ");
    } else {
        sb_puts(&msg, "unexpected ");
    }
    if (found == YYSYMBOL_YYEOF) {
        sb_puts(&msg, "end of file");
    } else if (loc.end > loc.begin && loc.end - loc.begin <= 32 &&
               found != YYSYMBOL_STRING) {
        sb_printf(&msg, "'%.*s'", (int)(loc.end - loc.begin), ctx->text + loc.begin);
    } else {
        PUT_SYMBOL(&msg, found);
    }
#undef PUT_SYMBOL
    /* a comparison where a generic argument list expects '>' or ',': the '>' of a comparison
     * would close the list, so such arguments need parentheses */
    bool expects_close = false;
    for (int i = 0; i < n; i++)
        expects_close |= strcmp(yysymbol_name(expected[i]), "'>'") == 0;
    static const char *const cmp_ops[] = {"==", "!=", "<=", ">=", "<", "&&", "||"};
    for (size_t i = 0; expects_close && i < sizeof cmp_ops / sizeof cmp_ops[0]; i++)
        if (loc.end - loc.begin == strlen(cmp_ops[i]) && memcmp(ctx->text + loc.begin, cmp_ops[i], loc.end - loc.begin) == 0) {
            sb_puts(&msg, "; a generic argument with a comparison goes in parentheses: f::<(A == B)>");
            break;
        }
    /* a missing ';' is reported after the previous token, where it belongs (end of file is
     * not a token from the scanner: the previous token is the last one) */
    uint32_t prev_end = found == YYSYMBOL_YYEOF ? ctx->tok_end : ctx->prev_tok_end;
    for (int i = 0; i < n; i++)
        if (strcmp(yysymbol_name(expected[i]), "';'") == 0 && prev_end < loc.begin)
            loc.begin = loc.end = prev_end;
    diag_error(ctx->diag, loc, "%s", msg.data);
    sb_free(&msg);
    return 0;
}

bool parse_file(ParseCtx *ctx)
{
    void *scanner;
    if (tl_yylex_init_extra(ctx, &scanner) != 0) {
        diag_error(ctx->diag, loc_none(), "cannot start the scanner");
        return false;
    }
    /* scan the DiagEngine's copy in place: yy_scan_buffer needs two trailing NULs */
    SourceFile *f = ctx->diag->files[ctx->file];
    size_t n = f->len;
    char *buf = tl_xmalloc(n + 2);
    memcpy(buf, f->text, n);
    buf[n] = buf[n + 1] = 0;
    ctx->text = buf;
    YY_BUFFER_STATE b = tl_yy_scan_buffer(buf, n + 2, scanner);
    int errs = ctx->diag->nerrors;
    int rc = b ? tl_yyparse(scanner, ctx) : 2;
    if (rc == 2 && !ctx->too_deep) /* tl_yyerror has said why, unless the buffer failed */
        diag_error(ctx->diag, loc_none(), "%s: nesting too deep to parse", f->path);
    if (b)
        tl_yy_delete_buffer(b, scanner);
    tl_yylex_destroy(scanner);
    free(buf);
    ctx->text = f->text;
    sb_free(&ctx->doc);
    Module *m = ARENA_NEW(ctx->arena, Module);
    m->file = ctx->file;
    m->nitems = ctx->items.len;
    m->items = ARENA_ARRAY(ctx->arena, Item *, ctx->items.len);
    for (int i = 0; i < ctx->items.len; i++) {
        m->items[i] = ctx->items.items[i];
        m->items[i]->file = ctx->file;
    }
    ptrvec_free(&ctx->items);
    ctx->module = m;
    return rc == 0 && ctx->diag->nerrors == errs && !ctx->too_deep;
}
