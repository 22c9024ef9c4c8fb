/* replay_main.c - runs a fuzz target without libFuzzer: feeds it every file named on the command
 * line, and every file of every directory named (in name order, hidden files skipped), each in a
 * heap buffer of exactly its size. This is how the committed seed corpus runs as an ordinary test
 * in the normal and the sanitizer builds.
 *
 *   fuzz_<target>_replay [--min-inputs N] [--min-accepted N] PATH...
 *
 * Exit status 0 when every input ran (a broken invariant or a sanitizer report aborts) and at
 * least N inputs ran / were accepted by the library; 1 otherwise, with the reason on stderr.
 * --min-accepted catches a corpus gone stale, e.g. seeds whose model fingerprint no longer matches.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"

typedef struct replay {
    unsigned long inputs;
    int failed;
} replay;

static void run_file(replay *r, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open '%s': %s\n", path, strerror(errno));
        r->failed = 1;
        return;
    }
    size_t capacity = 4096, size = 0;
    unsigned char *buffer = malloc(capacity);
    size_t n;
    while (buffer && (n = fread(buffer + size, 1, capacity - size, f)) > 0) {
        size += n;
        if (size == capacity) {
            unsigned char *bigger = realloc(buffer, capacity *= 2);
            if (!bigger) free(buffer);
            buffer = bigger;
        }
    }
    int read_error = ferror(f);
    fclose(f);
    if (!buffer || read_error) {
        fprintf(stderr, "replay: cannot read '%s'\n", path);
        free(buffer);
        r->failed = 1;
        return;
    }
    /* Exactly `size` bytes, so a read past the input's end is outside the allocation. */
    unsigned char *exact = malloc(size ? size : 1);
    if (!exact) {
        fprintf(stderr, "replay: out of memory for '%s' (%zu bytes)\n", path, size);
        free(buffer);
        r->failed = 1;
        return;
    }
    if (size) memcpy(exact, buffer, size);
    free(buffer);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
    LLVMFuzzerTestOneInput(exact, size);
    free(exact);
    r->inputs++;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_directory(replay *r, const char *dir_path) {
    DIR *dir = opendir(dir_path);
    if (!dir) {
        fprintf(stderr, "replay: cannot open directory '%s': %s\n", dir_path, strerror(errno));
        r->failed = 1;
        return;
    }
    char **names = NULL;
    size_t count = 0, capacity = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        if (count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            char **bigger = realloc(names, capacity * sizeof *names);
            if (!bigger) break;
            names = bigger;
        }
        names[count] = strdup(entry->d_name);
        if (names[count]) count++;
    }
    closedir(dir);
    if (count) qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 0; i < count; i++) {
        size_t length = strlen(dir_path) + strlen(names[i]) + 2;
        char *path = malloc(length);
        if (path) {
            snprintf(path, length, "%s/%s", dir_path, names[i]);
            struct stat st;
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) run_file(r, path);
            free(path);
        }
        free(names[i]);
    }
    free(names);
}

static int parse_count(const char *flag, const char *text, unsigned long *out) {
    char *end;
    errno = 0;
    unsigned long v = text ? strtoul(text, &end, 10) : 0;
    if (!text || text[0] == '\0' || text[0] == '-' || *end != '\0' || errno) {
        fprintf(stderr, "replay: %s needs a count, found '%s'\n", flag, text ? text : "");
        return 0;
    }
    *out = v;
    return 1;
}

int main(int argc, char **argv) {
    replay r = {0, 0};
    unsigned long min_inputs = 1, min_accepted = 0;
    int paths = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--min-inputs") == 0) {
            if (!parse_count(argv[i], argv[i + 1], &min_inputs)) return 1;
            i++;
        } else if (strcmp(argv[i], "--min-accepted") == 0) {
            if (!parse_count(argv[i], argv[i + 1], &min_accepted)) return 1;
            i++;
        } else {
            struct stat st;
            if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
                run_directory(&r, argv[i]);
            else
                run_file(&r, argv[i]);
            paths++;
        }
    }
    if (paths == 0) {
        fprintf(stderr, "usage: %s [--min-inputs N] [--min-accepted N] FILE_OR_DIRECTORY...\n",
                argv[0]);
        return 1;
    }
    printf("replayed %lu inputs, %lu accepted by the library\n", r.inputs, fuzz_inputs_accepted);
    if (r.inputs < min_inputs) {
        fprintf(stderr, "replay: %lu inputs ran, expected at least %lu\n", r.inputs, min_inputs);
        r.failed = 1;
    }
    if (fuzz_inputs_accepted < min_accepted) {
        fprintf(stderr, "replay: %lu inputs accepted, expected at least %lu (stale corpus?)\n",
                fuzz_inputs_accepted, min_accepted);
        r.failed = 1;
    }
    return r.failed;
}
