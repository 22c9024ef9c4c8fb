/* alloc_faults.c - allocation-failure injection in a running fwm-serve, for tests
 * (tests/server/test_alloc_faults.py), set by the environment and armed once the server is ready to
 * serve (its start-up allocations are not counted):
 *   FWM_ALLOC_SITES=PATH   record each code address that allocates (as MODULE+0xOFFSET, so that runs
 *                          compare whatever the load addresses) and the number of its first
 *                          allocation; written to PATH when the server stops;
 *   FWM_ALLOC_FAIL_AT=N    the N-th allocation from then fails, once (every other one succeeds);
 *   FWM_ALLOC_FAIL_SITE=MODULE+0xOFFSET  the first allocation from then made at that site fails,
 *                          once: the same place whatever order the threads allocate in;
 *   FWM_ALLOC_REPORT=PATH  with either: the site that failed is written to PATH at the end
 *                          ("failed MODULE+0xOFFSET", or "failed none" when fewer were made).
 * Nothing happens without them. The site table is fixed-size and lock-protected: the allocator
 * calls the watch from any thread, and it must not allocate.
 */
#define _GNU_SOURCE 1
#include "alloc_faults.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_alloc.h"

#define SITES 8192 /* a power of two, far above the sites a server reaches */

typedef struct site {
    void *address;
    long first;
} site;

static site table[SITES];
static size_t site_count;
static bool table_full;
static pthread_mutex_t table_mutex = PTHREAD_MUTEX_INITIALIZER;
static const char *sites_path, *report_path;
static bool failing;

static void watch(long n, void *address) {
    uintptr_t h = (uintptr_t)address;
    h ^= h >> 17;
    h *= 0x9e3779b97f4a7c15ull;
    pthread_mutex_lock(&table_mutex);
    for (size_t i = (size_t)(h >> 40) & (SITES - 1), probes = 0; probes < SITES; i = (i + 1) & (SITES - 1), probes++) {
        if (table[i].address == address) break;
        if (!table[i].address) {
            if (site_count + 1 >= SITES / 2) {
                table_full = true;
                break;
            }
            table[i].address = address;
            table[i].first = n;
            site_count++;
            break;
        }
    }
    pthread_mutex_unlock(&table_mutex);
}

/* MODULE+0xOFFSET for a code address (its module's file name without the folder). */
static void name_site(void *address, char *out, size_t size) {
    Dl_info info;
    if (address && dladdr(address, &info) && info.dli_fname && info.dli_fbase) {
        const char *base = strrchr(info.dli_fname, '/');
        snprintf(out, size, "%s+0x%zx", base ? base + 1 : info.dli_fname,
                 (size_t)((uintptr_t)address - (uintptr_t)info.dli_fbase));
    } else {
        snprintf(out, size, "%p", address);
    }
}

typedef struct module_search {
    const char *name;
    size_t length;
    uintptr_t base;
} module_search;

static int find_module(struct dl_phdr_info *info, size_t size, void *user) {
    (void)size;
    module_search *m = user;
    const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : program_invocation_name;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strlen(base) != m->length || strncmp(base, m->name, m->length) != 0) return 0;
    m->base = (uintptr_t)info->dlpi_addr;
    return 1;
}

/* The code address MODULE+0xOFFSET names in this process (MODULE: fwm-serve or a library it
 * loaded, as name_site writes it), or NULL. */
static void *site_address(const char *name) {
    const char *plus = strrchr(name, '+');
    if (!plus) return NULL;
    module_search m = {name, (size_t)(plus - name), 0};
    if (!dl_iterate_phdr(find_module, &m)) return NULL;
    return (void *)(m.base + (uintptr_t)strtoull(plus + 1, NULL, 16));
}

void fwm__alloc_faults_arm(void) {
    sites_path = getenv("FWM_ALLOC_SITES");
    report_path = getenv("FWM_ALLOC_REPORT");
    const char *at = getenv("FWM_ALLOC_FAIL_AT"), *where = getenv("FWM_ALLOC_FAIL_SITE");
    if (where && *where) {
        void *site = site_address(where);
        if (!site) {
            fprintf(stderr, "fwm-serve: FWM_ALLOC_FAIL_SITE=%s: not a site of this program (MODULE+0xOFFSET)\n", where);
        } else {
            failing = true;
            fwm__alloc_fail_site(site);
            fprintf(stderr, "fwm-serve: allocation-failure injection: the next allocation at %s fails\n", where);
        }
    }
    if (sites_path && *sites_path) fwm__alloc_set_watch(watch);
    if (at && *at) {
        long n = strtol(at, NULL, 10);
        if (n > 0) {
            failing = true;
            fwm__alloc_fail_once(n);
            fprintf(stderr, "fwm-serve: allocation-failure injection: allocation %ld from now fails\n", n);
        }
    }
}

void fwm__alloc_faults_report(void) {
    char name[512];
    if (sites_path && *sites_path) {
        fwm__alloc_set_watch(NULL);
        FILE *f = fopen(sites_path, "w");
        if (f) {
            pthread_mutex_lock(&table_mutex);
            for (size_t i = 0; i < SITES; i++) {
                if (!table[i].address) continue;
                name_site(table[i].address, name, sizeof name);
                fprintf(f, "%ld %s\n", table[i].first, name);
            }
            if (table_full) fprintf(f, "# more sites than the table holds\n");
            pthread_mutex_unlock(&table_mutex);
            fclose(f);
        }
    }
    if (failing && report_path && *report_path) {
        FILE *f = fopen(report_path, "w");
        if (f) {
            void *failed = fwm__alloc_failed_site();
            if (failed) name_site(failed, name, sizeof name);
            fprintf(f, "failed %s\n", failed ? name : "none");
            fclose(f);
        }
    }
    fwm__alloc_fail_reset();
}
