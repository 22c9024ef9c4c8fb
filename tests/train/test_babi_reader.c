/* test_babi_reader.c - bAbI file parsing: tokens of sentences and questions as the spec defines
 * them (expected token lists written by hand from docs/MODEL.md), and a clear error,
 * naming file and line, for each kind of malformed input; a missing file names its path. */
#include <stdio.h>
#include <stdlib.h>

#include "babi_reader.h"
#include "catbabi_stream.h"
#include "check.h"

static void expect_tokens(const char *text, const char *const *want, size_t n_want,
                          size_t stories, size_t questions)
{
    fwm__babi_corpus c = {0};
    fwm_error err;
    fwm_status st = fwm__babi_read_buffer(&c, text, strlen(text), "mem.txt", 4, &err);
    CHECK_INT(st, FWM_OK);
    if (st != FWM_OK)
        fprintf(stderr, "  message: %s\n", err.message);
    CHECK_INT(c.n_stories, stories);
    CHECK_INT(c.n_tokens, n_want);
    size_t q = 0;
    for (size_t s = 0; s < c.n_stories; s++) {
        q += c.stories[s].n_questions;
        CHECK_INT(c.stories[s].task, 4);
    }
    CHECK_INT(q, questions);
    for (size_t i = 0; i < n_want && i < c.n_tokens; i++)
        if (strcmp(fwm__babi_token(&c, i), want[i]) != 0) {
            fprintf(stderr, "token %zu: got '%s', expected '%s'\n", i, fwm__babi_token(&c, i),
                    want[i]);
            check_failures++;
        }
    fwm__babi_corpus_release(&c);
}

static void expect_error(const char *text, fwm_status status, const char *needle)
{
    fwm__babi_corpus c = {0};
    fwm_error err = {0};
    CHECK_INT(fwm__babi_read_buffer(&c, text, strlen(text), "bad.txt", 1, &err), status);
    CHECK_CONTAINS(err.message, needle);
    CHECK_INT(c.n_stories, 0);
    fwm__babi_corpus_release(&c);
}

int main(void)
{
    static const char *const story[] = {"mary", "moved", "to", "the", "bathroom", ".", "where",
                                        "is", "mary", "?", "bathroom", "john", "went", "to",
                                        "the", "hallway", ".", "how", "do", "you", "go", "?",
                                        "n,w", "where", "is", "john", "?", "hallway"};
    expect_tokens("1 Mary moved to the bathroom.\n"
                  "2 Where is Mary? \tbathroom\t1\n"
                  "1 John went to the hallway.\n"
                  "2 How do you go?\tn,w\t1 2\n"
                  "3 Where is John?\thallway\t1\r\n",
                  story, sizeof story / sizeof story[0], 2, 3);
    static const char *const final_newline_missing[] = {"a", "b", "."};
    expect_tokens("1 A b.", final_newline_missing, 3, 1, 0);

    expect_error("Mary moved.\n", FWM_ERR_FORMAT, "bad.txt:1: expected a line ID");
    expect_error("1 Mary moved.\n3 John left.\n", FWM_ERR_FORMAT,
                 "bad.txt:2: line ID 3 breaks the story (expected 2");
    expect_error("2 Mary moved.\n", FWM_ERR_FORMAT, "bad.txt:1: line ID 2 breaks the story");
    expect_error("1 Mary moved.\n2 Where is Mary?\tbathroom\n", FWM_ERR_FORMAT,
                 "bad.txt:2: a question line needs exactly three tab-separated fields");
    expect_error("1 Mary moved.\n2 Where is Mary?\tthe bathroom\t1\n", FWM_ERR_FORMAT,
                 "bad.txt:2: answer \"the bathroom\" is not one word");
    expect_error("1 Mary moved.\n2 Where is Mary?\t\t1\n", FWM_ERR_FORMAT, "bad.txt:2: empty answer");
    expect_error("1 Mary moved.\n2 Where is Mary?\tbathroom\tone\n", FWM_ERR_FORMAT,
                 "bad.txt:2: supporting fact IDs \"one\" must be numbers");
    expect_error("1 Mary moved.\n2 Where is Mary\tbathroom\t1\n", FWM_ERR_FORMAT,
                 "bad.txt:2: question \"Where is Mary\" does not end with \"?\"");
    expect_error("1 Mary moved.\n\n2 John left.\n", FWM_ERR_FORMAT, "bad.txt:2: empty line");
    expect_error("1 Mary m\xc3\xb6ved.\n", FWM_ERR_FORMAT,
                 "bad.txt:1: byte 0xc3 at column 9 is not printable ASCII");
    expect_error("1 \n", FWM_ERR_FORMAT, "bad.txt:1: sentence has no words");
    expect_error("", FWM_ERR_FORMAT, "bad.txt: no stories");

    /* a missing file is named */
    fwm__babi_corpus c = {0};
    fwm_error err = {0};
    CHECK_INT(fwm__babi_read_file(&c, "/nonexistent/qa1_train.txt", 1, &err), FWM_ERR_IO);
    CHECK_CONTAINS(err.message, "/nonexistent/qa1_train.txt");
    fwm__babi_corpus_release(&c);

    /* a data folder with a missing file is refused, naming the file */
    fwm__catbabi data;
    char dir[] = "/tmp/fwm-test-babi-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/en-valid && cd %s/en-valid && for t in $(seq 1 20); do "
             "for s in train valid test; do printf '1 Mary moved.\\n2 Where is Mary?\\tx\\t1\\n' "
             "> qa${t}_$s.txt; done; done && rm qa7_valid.txt", dir, dir);
    CHECK_INT(system(cmd), 0);
    CHECK_INT(fwm__catbabi_load(&data, dir, "en-valid", NULL, NULL, NULL, &err), FWM_ERR_IO);
    CHECK_CONTAINS(err.message, "en-valid/qa7_valid.txt");
    /* ... and a malformed one by file and line */
    snprintf(cmd, sizeof cmd, "cd %s/en-valid && printf '1 Mary moved.\\n2 Where is Mary?\\tx\\n'"
             " > qa7_valid.txt", dir);
    CHECK_INT(system(cmd), 0);
    CHECK_INT(fwm__catbabi_load(&data, dir, "en-valid", NULL, NULL, NULL, &err), FWM_ERR_FORMAT);
    CHECK_CONTAINS(err.message, "en-valid/qa7_valid.txt:2:");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_INT(system(cmd), 0);
    return check_finish("test_babi_reader");
}
