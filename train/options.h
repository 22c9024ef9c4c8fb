/* options.h - a command line described by one table (fwm-train, fwm-eval): each option's name,
 * the kind of its value, where in the program's settings it is stored, its range and its --help
 * text. fwm__options_parse reads argv through the table and fwm__options_help prints the help
 * text from it, so an option is one row. What a row cannot say (a value copied to several
 * places, a check against another setting) goes in the row's `then` hook. */
#ifndef FWM_TRAIN_OPTIONS_H
#define FWM_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
    FWM__OPTION_TEXT,   /* no option: a line of --help (a heading, a note), printed as it is */
    FWM__OPTION_SET,    /* no value: the int at offset becomes 1 */
    FWM__OPTION_CLEAR,  /* no value: the int at offset becomes 0 */
    FWM__OPTION_HOOK,   /* no value: only the hook runs */
    FWM__OPTION_INT,    /* an integer from min to max (fwm__parse_long's message otherwise) */
    FWM__OPTION_LONG,
    FWM__OPTION_U32,    /* uint32_t */
    FWM__OPTION_U64,    /* uint64_t */
    FWM__OPTION_SIZE,   /* size_t */
    FWM__OPTION_DOUBLE, /* a number from min to max (fwm__parse_double's message otherwise) */
    FWM__OPTION_FLOAT,
    FWM__OPTION_STRING, /* const char *, the argv string itself */
    FWM__OPTION_ON_OFF, /* "on" or "off": the int at offset becomes 1 or 0 */
    FWM__OPTION_ON_OFF_BOOL, /* the same into a bool */
    FWM__OPTION_VALUE,  /* a value for the hook alone, which parses it */
} fwm__option_kind;

struct fwm__option;

/* Runs after the row's value is stored. `name` is the name used (the row's or its alias); `value`
 * is NULL for the kinds without one. Returns 0, or the exit code after printing why. */
typedef int (*fwm__option_hook)(void *settings, const struct fwm__option *option,
                                const char *name, const char *value);

typedef struct fwm__option {
    const char *name;       /* "--steps"; NULL for FWM__OPTION_TEXT */
    fwm__option_kind kind;
    size_t offset;          /* where the value goes in the settings */
    double min, max;        /* the numeric kinds' range (inclusive) */
    const char *arg;        /* the value's name in --help ("N", "on|off"), NULL for none */
    const char *help;       /* --help's text: lines after the first continue under it ('\n');
                               "{}" is the default value, "{key}" the program's lookup(key) */
    fwm__option_hook then;  /* NULL: none */
    unsigned applies;       /* the contexts the option belongs to (bits); 0: every one */
    const char *alias;      /* a deprecated name also accepted (a note says the new one); or NULL */
} fwm__option;

/* How argv is read. */
typedef struct fwm__options_parser {
    const fwm__option *table;
    size_t count;
    void *settings;         /* what the rows' offsets count from */
    unsigned context;       /* the bits of `applies` that hold this run */
    FILE *messages;         /* errors and notes; NULL: none printed (the exit codes stay) */
    const char *alias_note; /* added to "note: OLD is deprecated; use NEW" (may be "") */
    /* A word that is not an option (does not start with '-'): 0, or the exit code after printing
     * why. NULL: such a word is an unknown option. */
    int (*positional)(void *settings, const char *word);
} fwm__options_parser;

/* What the parse found besides the settings. */
typedef struct fwm__options_result {
    int help;               /* --help or -h was given (parsing stopped there) */
    const char *misplaced;  /* the last option given whose `applies` misses the context, or NULL */
    unsigned char *given;   /* given[i]: row i appeared (the caller's array of `count`), or NULL */
} fwm__options_result;

/* Parse argv[1..argc-1]: 0, or the exit code (2) after a message on an unknown option, a missing
 * value, a value that is not one of the row's (the numeric kinds exit(2) from fwm__parse_long and
 * fwm__parse_double, as before) or a hook's refusal. */
int fwm__options_parse(const fwm__options_parser *parser, int argc, char **argv,
                       fwm__options_result *result);

/* Whether the row named `name` was given (result->given must be set). */
int fwm__options_given(const fwm__options_parser *parser, const fwm__options_result *result,
                       const char *name);

/* The table's --help lines: each option as "  --name ARG" then its help from `column` (counted
 * from 0; after two spaces where the name is longer), its further lines under it; TEXT rows as
 * they are.
 * `defaults` holds the settings before parsing ("{}"); lookup(key, buffer, size) writes what
 * "{key}" stands for (NULL: no such markers). */
void fwm__options_help(FILE *out, const fwm__option *table, size_t count, int column,
                       const void *defaults,
                       void (*lookup)(const char *key, char *buffer, size_t size));

#endif
