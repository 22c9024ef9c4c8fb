/* options.c - a command line read and described through one table of options (options.h). */
#include "options.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cli_common.h"

static const fwm__option *find(const fwm__options_parser *p, const char *name, int *alias)
{
    for (size_t i = 0; i < p->count; i++) {
        const fwm__option *o = &p->table[i];
        if (o->kind == FWM__OPTION_TEXT)
            continue;
        if (strcmp(o->name, name) == 0 || (o->alias && strcmp(o->alias, name) == 0)) {
            *alias = strcmp(o->name, name) != 0;
            return o;
        }
    }
    return NULL;
}

static int takes_value(fwm__option_kind kind)
{
    return kind != FWM__OPTION_SET && kind != FWM__OPTION_CLEAR && kind != FWM__OPTION_HOOK;
}

/* The row's value into the settings: 0, or 2 after a message. */
static int store(const fwm__options_parser *p, const fwm__option *o, const char *name,
                 const char *value)
{
    char *field = (char *)p->settings + o->offset;
    switch (o->kind) {
    case FWM__OPTION_SET:
        *(int *)field = 1;
        break;
    case FWM__OPTION_CLEAR:
        *(int *)field = 0;
        break;
    case FWM__OPTION_INT:
        *(int *)field = (int)fwm__parse_long(name, value, (long)o->min, (long)o->max);
        break;
    case FWM__OPTION_LONG:
        *(long *)field = fwm__parse_long(name, value, (long)o->min, (long)o->max);
        break;
    case FWM__OPTION_U32:
        *(uint32_t *)field = (uint32_t)fwm__parse_long(name, value, (long)o->min, (long)o->max);
        break;
    case FWM__OPTION_U64:
        *(uint64_t *)field = (uint64_t)fwm__parse_long(name, value, (long)o->min, (long)o->max);
        break;
    case FWM__OPTION_SIZE:
        *(size_t *)field = (size_t)fwm__parse_long(name, value, (long)o->min, (long)o->max);
        break;
    case FWM__OPTION_DOUBLE:
        *(double *)field = fwm__parse_double(name, value, o->min, o->max);
        break;
    case FWM__OPTION_FLOAT:
        *(float *)field = (float)fwm__parse_double(name, value, o->min, o->max);
        break;
    case FWM__OPTION_STRING:
        *(const char **)field = value;
        break;
    case FWM__OPTION_ON_OFF:
    case FWM__OPTION_ON_OFF_BOOL: {
        int on = strcmp(value, "on") == 0;
        if (!on && strcmp(value, "off") != 0) {
            if (p->messages)
                fprintf(p->messages, "error: %s expects on or off, got '%s'\n", name, value);
            return 2;
        }
        if (o->kind == FWM__OPTION_ON_OFF)
            *(int *)field = on;
        else
            *(bool *)field = on;
        break;
    }
    case FWM__OPTION_TEXT:
    case FWM__OPTION_HOOK:
    case FWM__OPTION_VALUE:
        break;
    }
    return 0;
}

int fwm__options_parse(const fwm__options_parser *p, int argc, char **argv,
                       fwm__options_result *result)
{
    result->help = 0;
    result->misplaced = NULL;
    if (result->given)
        memset(result->given, 0, p->count);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            result->help = 1;
            return 0;
        }
        if (p->positional && a[0] != '-') {
            int code = p->positional(p->settings, a);
            if (code)
                return code;
            continue;
        }
        int alias = 0;
        const fwm__option *o = find(p, a, &alias);
        if (!o || (takes_value(o->kind) && !v)) {
            if (p->messages && v)
                fprintf(p->messages, "error: unknown option %s (see --help)\n", a);
            else if (p->messages)
                fprintf(p->messages, "error: unknown option or missing value: %s (see --help)\n",
                        a);
            return 2;
        }
        if (alias && p->messages)
            fprintf(p->messages, "note: %s is deprecated; use %s%s\n", a, o->name,
                    p->alias_note ? p->alias_note : "");
        if (!takes_value(o->kind))
            v = NULL;
        else
            i++;
        int code = store(p, o, a, v);
        if (code)
            return code;
        if (result->given)
            result->given[o - p->table] = 1;
        if (o->applies && !(o->applies & p->context))
            result->misplaced = a;
        if (o->then && (code = o->then(p->settings, o, a, v)) != 0)
            return code;
    }
    return 0;
}

int fwm__options_given(const fwm__options_parser *p, const fwm__options_result *result,
                       const char *name)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->table[i].kind != FWM__OPTION_TEXT && strcmp(p->table[i].name, name) == 0)
            return result->given[i];
    return 0;
}

/* The row's default as --help shows it ("{}"). */
static void format_default(const fwm__option *o, const void *defaults, char *buffer, size_t size)
{
    const char *field = (const char *)defaults + o->offset;
    buffer[0] = 0;
    switch (o->kind) {
    case FWM__OPTION_INT:
    case FWM__OPTION_SET:
    case FWM__OPTION_CLEAR:
        snprintf(buffer, size, "%d", *(const int *)field);
        break;
    case FWM__OPTION_LONG:
        snprintf(buffer, size, "%ld", *(const long *)field);
        break;
    case FWM__OPTION_U32:
        snprintf(buffer, size, "%u", (unsigned)*(const uint32_t *)field);
        break;
    case FWM__OPTION_U64:
        snprintf(buffer, size, "%llu", (unsigned long long)*(const uint64_t *)field);
        break;
    case FWM__OPTION_SIZE:
        snprintf(buffer, size, "%zu", *(const size_t *)field);
        break;
    case FWM__OPTION_DOUBLE:
        snprintf(buffer, size, "%g", *(const double *)field);
        break;
    case FWM__OPTION_FLOAT:
        snprintf(buffer, size, "%g", (double)*(const float *)field);
        break;
    case FWM__OPTION_STRING: {
        const char *text = *(const char *const *)field;
        snprintf(buffer, size, "%s", text ? text : "");
        break;
    }
    case FWM__OPTION_ON_OFF:
        snprintf(buffer, size, "%s", *(const int *)field ? "on" : "off");
        break;
    case FWM__OPTION_ON_OFF_BOOL:
        snprintf(buffer, size, "%s", *(const bool *)field ? "on" : "off");
        break;
    case FWM__OPTION_TEXT:
    case FWM__OPTION_HOOK:
    case FWM__OPTION_VALUE:
        break;
    }
}

/* The help text with its markers replaced, each line after the first indented by `indent`. */
static void print_text(FILE *out, const fwm__option *o, const void *defaults,
                       void (*lookup)(const char *key, char *buffer, size_t size), int indent)
{
    for (const char *s = o->help; *s; s++) {
        if (*s == '\n') {
            fprintf(out, "\n%*s", s[1] ? indent : 0, "");
            continue;
        }
        const char *close = *s == '{' ? strchr(s, '}') : NULL;
        if (!close) {
            fputc(*s, out);
            continue;
        }
        char key[64], value[256];
        snprintf(key, sizeof key, "%.*s", (int)(close - s - 1), s + 1);
        value[0] = 0;
        if (!key[0])
            format_default(o, defaults, value, sizeof value);
        else if (lookup)
            lookup(key, value, sizeof value);
        fputs(value, out);
        s = close;
    }
    fputc('\n', out);
}

void fwm__options_help(FILE *out, const fwm__option *table, size_t count, int column,
                       const void *defaults,
                       void (*lookup)(const char *key, char *buffer, size_t size))
{
    for (size_t i = 0; i < count; i++) {
        const fwm__option *o = &table[i];
        if (o->kind == FWM__OPTION_TEXT) {
            print_text(out, o, defaults, lookup, 0);
            continue;
        }
        char flag[128];
        snprintf(flag, sizeof flag, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        if ((int)strlen(flag) <= column - 3)
            fprintf(out, "  %-*s ", column - 3, flag);
        else
            fprintf(out, "  %s  ", flag);
        print_text(out, o, defaults, lookup, column);
    }
}
